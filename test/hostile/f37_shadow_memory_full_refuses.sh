#!/usr/bin/env bash
# Finding 37 (low-medium, any login role): a memory limit in shadow mode fails calls (53400) once the
# shared memory table is full under pg_ratelimit.memory_eviction = none, the README's setting for servers
# where untrusted roles may call rate_limit_request. Shadow mode is sold as a way to watch a new limit "before
# it bites" (README, Shadow mode): "a call it would deny is allowed". But a shadow limit's new key that
# finds no room is refused like any other ("the memory state table is full"): the production call that
# the limit was only meant to watch fails. Any login role fills the table (rate_limit_request is EXECUTE for
# PUBLIC; the table is one pool for every limit of every database), so one role turns every watch-only
# memory limit into an error for every new caller.
# Attack: with memory_eviction = none, an ordinary role requests distinct keys of a 1-per-day memory limit
# until every partition is full; then a new key asks the shadow limit.
# Expected: a shadow limit never fails a call it could not store: the call is allowed (flagged, or simply
# not remembered), never an ERROR.
# Needs the server started with shared_preload_libraries = 'pg_ratelimit'.
source "$(dirname "$0")/lib.sh"
setup_review review_f37_attacker
memory_eviction_none flood watch
q -c "SELECT rate_limit_define('flood', 10, '1 day', storage => 'memory')" \
  -c "SELECT rate_limit_define('watch', 10, '1 hour', storage => 'memory', shadow => true)" >/dev/null || exit 2
capacity=$(q -c "SELECT capacity FROM rate_limit_memory_usage()")
fill=$(q_any -U review_f37_attacker <<SQL
DO \$\$ DECLARE refused int := 0; BEGIN
    FOR i IN 1..$((capacity * 2)) LOOP
        BEGIN PERFORM rate_limit_request('flood' || i, 'flood');
        EXCEPTION WHEN SQLSTATE '53400' THEN refused := refused + 1; END;
    END LOOP;
    RAISE WARNING 'refused %', refused;
END \$\$;
SQL
)
echo "table capacity $capacity; after the attacker's flood: $fill $(q -c "SELECT * FROM rate_limit_memory_usage()")"
out=$(q_any -v VERBOSITY=sqlstate <<'SQL'
SELECT 'new key', allowed, shadow_denied FROM rate_limit_request('a-new-customer', 'watch');
SELECT 'batch', count(*) FROM rate_limit_request_many(ARRAY(SELECT 'new' || g FROM generate_series(1, 50) g), 'watch');
SQL
)
echo "$out"
grep -q '^ERROR:  53400' <<<"$out" && reproduced "after an ordinary role filled the memory table, the shadow limit failed calls with 53400: $(grep -c '^ERROR' <<<"$out") of 2 statements"
grep -q '^new key|t|' <<<"$out" && grep -q '^batch|50' <<<"$out" || { echo "unexpected output"; exit 2; }
holds "a shadow memory limit lets calls through when the table is full"
