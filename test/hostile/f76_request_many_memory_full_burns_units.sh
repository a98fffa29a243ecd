#!/usr/bin/env bash
# Finding 76 (low-medium, any login role): under pg_ratelimit.memory_eviction = none, once the shared memory
# table is full (any login role fills it: see f37), a rate_limit_request_many on a memory limit whose batch
# holds a new key fails with 53400 after the keys decided before it took their units: those are never given
# back. f44 fixed exactly this for rate_limit_request_all ("an error among memory triples refunds them
# first"); request_many was left as it was. Since memory batches are decided in the order given (6cd1a43),
# every key listed before the newcomer is charged. The caller gets an ERROR and no decision, so a gateway
# retries its batch: each retry burns one more unit of every known key in it (3 failed calls: a customer
# with 4 of 5 a day left -> 1), and none of those calls admitted anything.
# Attack: memory_eviction = none; a customer has used 'victim' once ('v1', 'v2'); an ordinary role fills
# the table with keys of another memory limit; the gateway calls request_many(['v1', 'newcomer', 'v2'])
# three times.
# Expected: a batch that fails consumes nothing (the keys decided before the error refunded, or room for
# every new key made sure of before any decision): 'v1' still has 4, as 'v2' has.
source "$(dirname "$0")/lib.sh"
setup_review review_f76_attacker
memory_eviction_none victim flood
q -c "SELECT rate_limit_define('victim', 5, '1 day', storage => 'memory')" \
  -c "SELECT rate_limit_define('flood', 5, '1 day', storage => 'memory')" \
  -c "SELECT count(*) FROM rate_limit_request_many(ARRAY['v1', 'v2'], 'victim')" >/dev/null || exit 2
capacity=$(q -c "SELECT capacity FROM rate_limit_memory_usage()")
q_any -U review_f76_attacker <<SQL >/dev/null
DO \$\$ BEGIN
    FOR i IN 1..$((capacity * 2)) LOOP
        BEGIN PERFORM rate_limit_request('flood' || i, 'flood');
        EXCEPTION WHEN SQLSTATE '53400' THEN NULL; END;
    END LOOP;
END \$\$;
SQL
units() { q -c "SELECT (rate_limit_check('$1', 'victim')).remaining + 1"; }
before="$(units v1)|$(units v2)"
out=$(for _ in 1 2 3; do
    q_any -v VERBOSITY=sqlstate -c "SELECT count(*) FROM rate_limit_request_many(ARRAY['v1', 'newcomer', 'v2'], 'victim')"
done)
after="$(units v1)|$(units v2)"
echo "units of v1|v2 before: $before; three batches: $(tr '\n' ' ' <<<"$out"); after: $after"
[ "$(grep -c '^ERROR:  53400' <<<"$out")" = 3 ] || { echo "the batches did not fail with 53400 (table not full?)"; exit 2; }
[ "$after" != "$before" ] && reproduced "three batches that failed (53400) consumed units of the keys before the newcomer: v1|v2 $before -> $after"
holds "a batch that fails with 53400 consumes nothing"
