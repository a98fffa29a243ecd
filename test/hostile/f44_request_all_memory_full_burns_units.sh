#!/usr/bin/env bash
# Finding 44 (low-medium, any login role): under pg_ratelimit.memory_eviction = none, once the shared memory
# table is full (any login role fills it: see f37), a rate_limit_request_all whose later memory triple is a
# new key fails with 53400 after the earlier memory triples took their units: those are never given back
# (request_all.cpp: "An error raised after memory entries were taken leaves them taken"). The README says
# "when one denies, nothing is consumed anywhere, on any storage" and that every argument is checked before
# anything is consumed; a call that fails consumes anyway. Each retry of the failing call burns one more unit
# of the victim's other limit, until the victim is locked out of it (3 failed calls here: 4 of 5 a day left -> 1).
# Attack: memory_eviction = none; the victim has used memA once; an ordinary role fills the table with keys
# of memB; the victim calls request_all([victim on memA, newcomer on memB]) three times.
# Expected: a call that fails consumes nothing (the memory triples taken before the error refunded, or the
# room for every new memory key made sure of before any take): memA still has 4 for the victim.
source "$(dirname "$0")/lib.sh"
setup_review review_f44_attacker
memory_eviction_none memA memB
q -c "SELECT rate_limit_define('memA', 5, '1 day', storage => 'memory')" \
  -c "SELECT rate_limit_define('memB', 5, '1 day', storage => 'memory')" \
  -c "SELECT rate_limit_request('victim', 'memA')" >/dev/null || exit 2
capacity=$(q -c "SELECT capacity FROM rate_limit_memory_usage()")
q_any -U review_f44_attacker <<SQL >/dev/null
DO \$\$ BEGIN
    FOR i IN 1..$((capacity * 2)) LOOP
        BEGIN PERFORM rate_limit_request('flood' || i, 'memB');
        EXCEPTION WHEN SQLSTATE '53400' THEN NULL; END;
    END LOOP;
END \$\$;
SQL
before=$(q -c "SELECT (rate_limit_check('victim', 'memA')).remaining + 1")
out=$(for _ in 1 2 3; do
    q_any -v VERBOSITY=sqlstate -c "SELECT allowed FROM rate_limit_request_all(ARRAY['victim', 'newcomer'], ARRAY['memA', 'memB']) WHERE position = 0"
done)
after=$(q -c "SELECT (rate_limit_check('victim', 'memA')).remaining + 1")
echo "victim's units on memA before: $before; three calls: $(tr '\n' ' ' <<<"$out"); after: $after"
[ "$(grep -c '^ERROR:  53400' <<<"$out")" = 3 ] || { echo "the calls did not fail with 53400 (table not full?)"; exit 2; }
[ "$after" -lt "$before" ] && reproduced "three calls that failed (53400) consumed $((before - after)) of the victim's units on memA ($before -> $after)"
holds "a call that fails with 53400 consumes nothing"
