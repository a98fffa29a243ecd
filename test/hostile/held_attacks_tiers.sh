#!/usr/bin/env bash
# Attacks on per-key tiers (rate_limit_override, rate_limit_override_drop, rate_limit_policy; commit 0a13a2a
# and after) that held during the review. Each check prints "ok: ..." or "FAILED: ..."; the script fails
# if any stops holding.
source "$(dirname "$0")/lib.sh"
setup_review tier_app tier_eve
failed=0
ok() { echo "ok: $*"; }
bad() { echo "FAILED: $*"; failed=1; }
as_eve() { psql -X -q -At -d "$REVIEW_DB" -U tier_eve "$@" 2>&1; }

# 1. Default privileges of the installing role never reach the tiers' objects.
q <<'SQL' >/dev/null
DROP EXTENSION pg_ratelimit;
ALTER DEFAULT PRIVILEGES GRANT ALL ON FUNCTIONS TO tier_app;
ALTER DEFAULT PRIVILEGES GRANT ALL ON TABLES TO tier_app;
CREATE EXTENSION pg_ratelimit;
SQL
leaks=$(q -c "SELECT string_agg(p.proname, ' ') FROM pg_proc p WHERE p.proname IN
                ('rate_limit_override', 'rate_limit_override_drop', 'rate_limit_override_changed', 'rate_limit_settle')
                AND has_function_privilege('tier_app', p.oid, 'EXECUTE')" \
           -c "SELECT string_agg(priv, ' ') FROM unnest(ARRAY['SELECT', 'INSERT', 'UPDATE', 'DELETE', 'TRUNCATE']) priv
                WHERE has_table_privilege('tier_app', 'rate_limit_override', priv)" | tr -d '\n')
[ -z "$leaks" ] && ok "default privileges give nothing on the tiers' objects" || bad "default privileges leak: $leaks"

# 2. An unprivileged role can neither read overrides nor change a tier.
q -c "SELECT rate_limit_define('api', 10, '1 hour')" -c "SELECT rate_limit_override('customer42', 'api', 1000)" >/dev/null
out=$(as_eve -c "SELECT * FROM rate_limit_override" -c "SELECT rate_limit_override('eve', 'api', 1e6)" \
             -c "SELECT rate_limit_override_drop('customer42', 'api')" -c "DELETE FROM rate_limit_override" \
             -c "SELECT rate_limit_override_changed()")
denied=$(grep -c 'permission denied' <<<"$out")
[ "$denied" = 5 ] && ok "PUBLIC: no read, write or call of the tiers (5 refusals)" || bad "PUBLIC: $denied of 5 refused: $out"

# 3. The trigger function refuses other tables (it would run on any table as its caller).
out=$(q_any -c "CREATE TABLE other (x int)" \
            -c "CREATE TRIGGER t AFTER INSERT ON other FOR EACH STATEMENT EXECUTE FUNCTION rate_limit_override_changed()" \
            -c "INSERT INTO other VALUES (1)")
grep -q 'fired on another table' <<<"$out" && ok "rate_limit_override_changed refuses another table" || bad "trigger on other table: $out"

# 4. Bad data by hand: NaN/Infinity/negative refused by the CHECKs; a NULL rate after DROP NOT NULL is an
#    error (23502), no crash; a row making an invalid limit fails that key only, and cleanup still works.
out=$(q_any -c "INSERT INTO rate_limit_override VALUES ('api', 'n1', 'NaN', NULL, NULL)" \
            -c "INSERT INTO rate_limit_override VALUES ('api', 'n2', 1, 'NaN', NULL)" \
            -c "INSERT INTO rate_limit_override VALUES ('api', 'n3', 1, NULL, 'NaN')" \
            -c "INSERT INTO rate_limit_override VALUES ('api', 'n4', 'Infinity', NULL, NULL)" \
            -c "INSERT INTO rate_limit_override VALUES ('api', 'n5', -1, NULL, NULL)")
[ "$(grep -c 'violates check constraint' <<<"$out")" = 5 ] && ok "NaN, Infinity, negative refused (23514)" || bad "CHECKs: $out"
before=$(crash_count)
out=$(q_any -c "ALTER TABLE rate_limit_override ALTER rate DROP NOT NULL" \
            -c "INSERT INTO rate_limit_override VALUES ('api', 'nullrate', NULL, NULL, NULL)" \
            -c "SELECT allowed FROM rate_limit_request('nullrate', 'api')" -c "SELECT rate_limit_cleanup()")
wait_for_server
grep -q 'NULL rate' <<<"$out" && [ "$(crash_count)" = "$before" ] && ok "NULL rate: an error, no crash" || bad "NULL rate: $out"
q -c "DELETE FROM rate_limit_override WHERE key = 'nullrate'" -c "ALTER TABLE rate_limit_override ALTER rate SET NOT NULL"
out=$(q_any -c "SELECT rate_limit_define('sw', 10, '1 minute', 'sliding_window')" \
            -c "INSERT INTO rate_limit_override VALUES ('sw', 'bad', 10, 5, NULL)" \
            -c "SELECT 'bad', allowed FROM rate_limit_request('bad', 'sw')" \
            -c "SELECT 'good', allowed FROM rate_limit_request('good', 'sw')" -c "SELECT 'cleanup', rate_limit_cleanup()")
grep -q 'capacity must equal its rate' <<<"$out" && grep -q '^good|t' <<<"$out" && grep -q '^cleanup|' <<<"$out" &&
    ok "an invalid hand-written override fails its key only (22023); cleanup runs" || bad "invalid override: $out"
q -c "DELETE FROM rate_limit_override WHERE limit_name = 'sw'"

# 5. Cache invalidation by DML under session_replication_role = replica, and by TRUNCATE, COPY.
for change in "SET session_replication_role = replica; INSERT INTO rate_limit_override VALUES ('api', 'r1', 1, NULL, NULL)" \
              "COPY rate_limit_override FROM PROGRAM 'echo api,r1,1,,' WITH (FORMAT csv)" \
              "TRUNCATE rate_limit_override; INSERT INTO rate_limit_override VALUES ('api', 'r1', 1, NULL, NULL)"; do
    q -c "DELETE FROM rate_limit_override WHERE key = 'r1'" -c "SELECT rate_limit_reset('r1', 'api')" >/dev/null
    log=$(mktemp)
    q >"$log" 2>&1 <<'SQL' &
SELECT 'cached', allowed FROM rate_limit_request('warm', 'api');
SELECT pg_sleep(2);
SELECT 'after', count(*) FILTER (WHERE allowed) FROM rate_limit_request_many(array_fill('r1'::text, ARRAY[5]), 'api');
SQL
    s=$!
    sleep 1
    q -c "$change" >/dev/null
    wait $s
    after=$(sed -n 's/^after|//p' "$log"); rm -f "$log"
    [ "$after" = 1 ] && ok "seen by a cached session: ${change%%;*}" || bad "${change%%;*}: the cached session admitted $after of 5 (expected 1)"
done

# 6. More than 10,000 overrides (key-by-key mode): a key remembered as having none is seen once given one.
q -c "INSERT INTO rate_limit_override SELECT 'api', 'bulk' || i, 5, NULL, NULL FROM generate_series(1, 10050) i"
log=$(mktemp)
q >"$log" 2>&1 <<'SQL' &
SELECT 'cached', count(*) FROM rate_limit_request_many(ARRAY(SELECT 'probe' || i FROM generate_series(1, 10100) i), 'api');
SELECT pg_sleep(2);
SELECT 'after', count(*) FILTER (WHERE allowed) FROM rate_limit_request_many(array_fill('probe7'::text, ARRAY[5]), 'api');
SQL
s=$!
sleep 1
q -c "SELECT rate_limit_override('probe7', 'api', 1, rescale => 'reset')" >/dev/null
wait $s
after=$(sed -n 's/^after|//p' "$log"); rm -f "$log"
[ "$after" = 1 ] && ok "key-by-key mode: a negative answer is dropped when the key gets an override" || bad "key-by-key mode: admitted $after of 5"

# 7. request_many with one key twice under an override; cleanup keeps a key its override makes not full.
out=$(q_any <<'SQL'
SELECT rate_limit_define('cl', 10, '1 second');
SELECT rate_limit_override('big', 'cl', 1000);
SET pg_ratelimit.fake_now = '2026-01-01 00:00:00+00';
SELECT 'many', count(*) FILTER (WHERE allowed) FROM rate_limit_request_many(ARRAY['big', 'big', 'big'], 'cl', ARRAY[400, 400, 400]);
SET pg_ratelimit.fake_now = '2026-01-01 00:00:00.1+00';
SELECT 'cleanup', rate_limit_cleanup('cl');
SELECT 'left', remaining FROM rate_limit_check('big', 'cl', 0.000001); -- 299.999999 left after the check
SQL
)
grep -q '^many|2' <<<"$out" && grep -q '^cleanup|0' <<<"$out" && grep -q '^left|299' <<<"$out" &&
    ok "request_many with a key twice and cleanup use the key's override" || bad "request_many/cleanup: $out"

# 8. Concurrency: requests while the key's override is changed back and forth (both paths' access run by
#    test/hostile/run.sh): never more admitted than the tightest tier allows plus what was rescaled.
q -c "SELECT rate_limit_define('race', 100, '1 hour')" -c "SELECT rate_limit_override('hot', 'race', 10, rescale => 'reset')" >/dev/null
for level in 'read committed' 'repeatable read' serializable; do
    for i in 1 2 3; do
        q -c "SET default_transaction_isolation = '$level'" -c "SELECT count(*) FROM generate_series(1, 40) g, LATERAL (SELECT allowed FROM rate_limit_request('hot', 'race')) d WHERE allowed" >/dev/null 2>&1 &
    done
    q -c "SELECT rate_limit_override('hot', 'race', 5)" -c "SELECT rate_limit_override('hot', 'race', 10)" >/dev/null 2>&1
    wait
done
state=$(q -c "SELECT round(value::numeric, 3) FROM rate_limit_state WHERE limit_name = 'race' AND key = 'hot'")
awk -v v="$state" 'BEGIN { exit !(v >= -0.001 && v <= 10) }' && ok "concurrent override changes: the state stays within [0, 10] ($state)" ||
    bad "concurrent override changes: state $state"

before=$(crash_count)
[ "$before" = 0 ] || bad "crashes in the server log: $before"
[ $failed = 0 ] || { echo "REPRODUCED: an attack on per-key tiers no longer holds"; exit 1; }
holds "attacks on per-key tiers held (privileges, bad data, cache invalidation, key-by-key mode, request_many, cleanup, concurrency)"
