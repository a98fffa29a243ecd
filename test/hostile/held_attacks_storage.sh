#!/usr/bin/env bash
# Attacks on the storage modes (memory, unlogged) and rate_limit_request_many that held (fourth review),
# kept as checks (exit 1 if any stops holding). Each prints "ok: ..." or "FAILED: ...".
# Needs the server started with shared_preload_libraries = 'pg_ratelimit' (test/hostile/run.sh does).
source "$(dirname "$0")/lib.sh"
setup_review review_storage_user
# No WARNING in the answers compared below (an earlier script may have left the shared table full).
export PGOPTIONS="${PGOPTIONS:-} -c client_min_messages=error"
failures=0
TMPDIR_REVIEW=$(mktemp -u)
check() {  # check NAME EXPECTED ACTUAL
    if [ "$2" = "$3" ]; then echo "ok: $1"; else echo "FAILED: $1: expected [$2], got [$3]"; failures=$((failures + 1)); fi
}
U() { psql -X -q -At -d "$REVIEW_DB" -U review_storage_user "$@" 2>&1; }
units() { q -c "SELECT d.remaining + d.allowed::int FROM rate_limit_check('$1', '$2') AS d"; }
q -c "SELECT rate_limit_define('mem', 3, '1000 days', storage => 'memory')" \
  -c "SELECT rate_limit_define('mem4', 8, '1000 days', storage => 'memory', shards => 4)" \
  -c "SELECT rate_limit_define('unl', 3, '1000 days', storage => 'unlogged')" >/dev/null || exit 2

# 1. PREPARE TRANSACTION of a transaction that dropped a memory limit fails cleanly: nothing prepared, the
#    limit and its keys' state are intact.
q -c "SELECT count(*) FROM rate_limit_request_many(ARRAY['p', 'p'], 'mem')" >/dev/null
got=$(q_any -c "BEGIN" -c "SELECT rate_limit_drop('mem')" -c "PREPARE TRANSACTION 'review_storage'" |
      grep -c 'cannot PREPARE a transaction that dropped or redefined a memory rate limit')
check "PREPARE of a memory limit's drop is refused" "1" "$got"
check "... nothing prepared, the key keeps its state" "0|1" "$(q -c "SELECT count(*) FROM pg_prepared_xacts WHERE gid = 'review_storage'")|$(units p mem)"

# 2. A drop rolled back to a savepoint keeps the state; a drop released and committed forgets it.
q -c "BEGIN" -c "SAVEPOINT s" -c "SELECT rate_limit_drop('mem')" -c "ROLLBACK TO s" -c "COMMIT" >/dev/null
check "a drop rolled back to a savepoint keeps the memory state" "1" "$(units p mem)"
q -c "BEGIN" -c "SAVEPOINT s" -c "SELECT rate_limit_drop('mem')" -c "RELEASE s" \
  -c "SELECT rate_limit_define('mem', 3, '1000 days', storage => 'memory')" -c "COMMIT" >/dev/null
check "a drop released and committed forgets the memory state" "3" "$(units p mem)"

# 3. A trigger on rate_limit_state_unlogged is refused as on rate_limit_state (it would run as the owner).
got=$(q_any -c "CREATE FUNCTION noisy() RETURNS trigger LANGUAGE plpgsql AS \$\$ BEGIN RAISE NOTICE 'fired'; RETURN NEW; END \$\$" \
            -c "CREATE TRIGGER noisy BEFORE INSERT OR UPDATE ON rate_limit_state_unlogged FOR EACH ROW EXECUTE FUNCTION noisy()" \
            -c "SELECT rate_limit_request('t', 'unl')" -c "DROP TRIGGER noisy ON rate_limit_state_unlogged" | tr '\n' ' ')
check "a trigger on rate_limit_state_unlogged is refused and never fires" "1|0" \
      "$(grep -c 'cannot use table "rate_limit_state_unlogged": it has triggers' <<<"$got")|$(grep -c fired <<<"$got")"

# 4. rate_limit_request_many checks every element before the first decision: a NULL key, a bad cost or a
#    cost above capacity anywhere fails the call with nothing consumed; multi-dimensional arrays are
#    refused; non-1 lower bounds are fine (positions count from 1); a NULL cost is 1.
got=$(U -c "SELECT * FROM rate_limit_request_many(ARRAY['n1', NULL], 'mem')" \
        -c "SELECT * FROM rate_limit_request_many(ARRAY['n1', 'n1'], 'mem', ARRAY[1, 'NaN'])" \
        -c "SELECT * FROM rate_limit_request_many(ARRAY['n1', 'n1', 'n1'], 'mem', ARRAY[1, 1, 4])" \
        -c "SELECT * FROM rate_limit_request_many(ARRAY['n1', 'n1'], 'mem', ARRAY[1])" \
        -c "SELECT * FROM rate_limit_request_many(ARRAY[['n1', 'n1'], ['n1', 'n1']], 'mem')" | grep -c '^ERROR')
check "bad batches (NULL key, NaN cost, cost > capacity, costs mismatch, 2-D) are refused" "5" "$got"
check "... and consumed nothing" "3" "$(units n1 mem)"
got=$(U -c "SELECT string_agg(key || '@' || position || '=' || allowed, ',' ORDER BY position)
              FROM rate_limit_request_many('[5:6]={a,b}'::text[], 'mem', '[7:8]={NULL,2}'::float8[])")
check "non-1 lower bounds: positions 1.., NULL cost counts 1" "a@1=true,b@2=true" "$got"
check "... and charged 1 and 2 units" "2|1" "$(units a mem)|$(units b mem)"
check "an empty batch returns no row" "0" "$(U -c "SELECT count(*) FROM rate_limit_request_many('{}'::text[], 'mem')")"

# 5. Duplicates of one key in a batch on a sharded memory limit: no self-deadlock, exactly the allowance.
got=$(U -c "SET statement_timeout = '10s'" -c "SELECT count(*) FILTER (WHERE allowed) FROM rate_limit_request_many(array_fill('dup'::text, ARRAY[40]), 'mem4')")
check "40 copies of a key on a 4-shard memory limit of 8: 8 admitted" "8" "$got"

# 6. Errors while a memory request runs inside PL/pgSQL EXCEPTION blocks leave no lock behind: the same
#    session and another one keep deciding on the same key and partition.
got=$(U <<'SQL' | tail -n 1
SET statement_timeout = '10s';
DO $$
DECLARE n int := 0;
BEGIN
    FOR i IN 1..20 LOOP
        BEGIN
            PERFORM rate_limit_request('exc', 'mem4', CASE WHEN i % 2 = 0 THEN 100 ELSE 1 END);
            PERFORM 1 / (i % 3);
        EXCEPTION WHEN OTHERS THEN n := n + 1;
        END;
    END LOOP;
    RAISE NOTICE 'caught %', n;
END $$;
SELECT count(*) FILTER (WHERE allowed) FROM rate_limit_request_many(array_fill('exc'::text, ARRAY[10]), 'mem4');
SQL
)
other=$(U -c "SET statement_timeout = '10s'" -c "SELECT (rate_limit_check('exc', 'mem4')).allowed")
check "errors caught by EXCEPTION blocks leave no lock: the key still decides, here and elsewhere" "0|f" "$got|$other"

# 7. A memory request from inside a trigger, in a statement touching 10 rows: exactly the allowance.
got=$(q <<'SQL' | tail -n 1
CREATE TABLE events (id int);
CREATE TABLE admitted (ok boolean);
CREATE FUNCTION charge() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN INSERT INTO admitted SELECT (rate_limit_request('trig', 'mem')).allowed; RETURN NEW; END $$;
CREATE TRIGGER charge BEFORE INSERT ON events FOR EACH ROW EXECUTE FUNCTION charge();
INSERT INTO events SELECT generate_series(1, 10);
SELECT count(*) FILTER (WHERE ok) FROM admitted;
SQL
)
check "memory requests from a row trigger admit exactly the allowance" "3" "$got"

# 8. Privileges: PUBLIC cannot call rate_limit_memory_usage, read rate_limit_storage, or reset/refund memory keys.
got=$(U -c "SELECT * FROM rate_limit_memory_usage()" -c "SELECT * FROM rate_limit_storage" \
        -c "SELECT rate_limit_reset('p', 'mem')" -c "SELECT rate_limit_refund('p', 'mem')" | grep -c 'permission denied')
check "PUBLIC cannot use rate_limit_memory_usage, rate_limit_storage, reset or refund" "4" "$got"

# 9. Identities: long keys (SHA-256 form) differing in their last byte, and keys sharing a 60-byte prefix,
#    are distinct keys.
long=$(printf 'x%.0s' $(seq 1 1000))
q -c "SELECT count(*) FROM rate_limit_request_many(ARRAY['${long}a', '${long}a', '${long}a'], 'mem')" \
  -c "SELECT count(*) FROM rate_limit_request_many(ARRAY['${long:0:60}a', '${long:0:60}a', '${long:0:60}a'], 'mem')" >/dev/null
check "long and same-prefix keys are distinct" "0|3|0|3" \
      "$(units "${long}a" mem)|$(units "${long}b" mem)|$(units "${long:0:60}a" mem)|$(units "${long:0:60}b" mem)"

# 10. Concurrency: 4 sessions x 30 requests on one key of a 2-shard memory limit of 50: exactly 50 admitted.
q -c "SELECT rate_limit_define('race', 50, '1000 days', storage => 'memory', shards => 2)" >/dev/null
for i in 1 2 3 4; do
    U -c "SELECT count(*) FILTER (WHERE (rate_limit_request('hot', 'race')).allowed) FROM generate_series(1, 30)" >"$TMPDIR_REVIEW.$i" &
done
wait
total=0
for i in 1 2 3 4; do total=$((total + $(cat "$TMPDIR_REVIEW.$i"))); rm -f "$TMPDIR_REVIEW.$i"; done
check "4 concurrent sessions on a sharded memory key admit exactly 50" "50" "$total"

# 11. A DBA's direct UPDATE of rate_limit_config: a new algorithm starts the keys afresh (as a redefinition
#     does); a new rate keeps their state.
q -c "SELECT count(*) FROM rate_limit_request_many(ARRAY['u', 'u'], 'mem')" -c "UPDATE rate_limit_config SET rate = 4, capacity = 4 WHERE name = 'mem'" >/dev/null
check "UPDATE of the rate keeps a memory key's state" "1" "$(units u mem)"
q -c "UPDATE rate_limit_config SET algorithm = 'fixed_window' WHERE name = 'mem'" >/dev/null
check "UPDATE of the algorithm starts memory keys afresh" "4" "$(units u mem)"

# 12. ALTER TABLE rate_limit_state_unlogged SET LOGGED (a DBA's choice): unlogged limits keep deciding exactly.
got=$(q -c "ALTER TABLE rate_limit_state_unlogged SET LOGGED" \
        -c "SELECT count(*) FILTER (WHERE allowed) FROM rate_limit_request_many(array_fill('lg'::text, ARRAY[5]), 'unl')" \
        -c "ALTER TABLE rate_limit_state_unlogged SET UNLOGGED" | tail -n 1)
check "after SET LOGGED an unlogged limit still admits exactly its allowance" "3" "$got"

echo "failures: $failures"
[ "$failures" -eq 0 ] || { echo "REPRODUCED: $failures storage attacks no longer hold"; exit 1; }
holds "every storage attack held"
