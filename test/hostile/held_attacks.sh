#!/usr/bin/env bash
# Attacks on commit 8d564b4 that held, kept as checks (exit 1 if any stops holding). Each prints
# "ok: ..." or "FAILED: ...".
source "$(dirname "$0")/lib.sh"
setup_review review_held_user
failures=0
check() {  # check NAME EXPECTED ACTUAL
    if [ "$2" = "$3" ]; then echo "ok: $1"; else echo "FAILED: $1: expected [$2], got [$3]"; failures=$((failures + 1)); fi
}
U() { psql -X -q -At -d "$REVIEW_DB" -U review_held_user "$@" 2>&1; }

q -c "SELECT rate_limit_define('h', 2, '1 hour')" >/dev/null

# 1. Caller's search_path and temp tables named like the extension's: ignored.
got=$(U <<'SQL'
CREATE TEMP TABLE rate_limit_state (limit_name text, key text, value float8, ts timestamptz);
CREATE TEMP TABLE rate_limit_config (name text, algorithm text, rate float8, period interval,
                                     capacity float8, max_reserved float8, start timestamptz);
INSERT INTO pg_temp.rate_limit_config VALUES ('h', 'token_bucket', 1e9, '1 second', 1e9, NULL, NULL);
SET search_path = pg_temp, public;
SELECT string_agg(allowed::text, ',') FROM (SELECT (public.rate_limit_request('k1', 'h')).allowed
                                            FROM generate_series(1, 3)) r;
SELECT count(*) FROM pg_temp.rate_limit_state;
SQL
)
check "temp look-alikes and search_path ignored" "$(printf 'true,true,false\n0')" "$got"

# 2. The override search path does not leak after caught errors.
got=$(q_any <<'SQL'
CREATE SCHEMA s1;
SET search_path = s1, public;
DO $$ BEGIN PERFORM rate_limit_drop('missing'); EXCEPTION WHEN OTHERS THEN NULL; END $$;
SELECT current_schemas(false)::text;
BEGIN; SAVEPOINT a; SELECT rate_limit_drop('missing'); ROLLBACK TO a; SELECT current_schemas(false)::text; COMMIT;
SQL
)
check "no search path leak after caught errors" "$(printf '{s1,public}\n{s1,public}')" \
      "$(grep -v -e ERROR -e '^$' <<<"$got")"

# 3. Definitions undone by ROLLBACK, ROLLBACK TO SAVEPOINT, an exception block and ROLLBACK PREPARED
#    are not used afterwards, nor while prepared: a request meanwhile decides under the old definition
#    (d|1, not 499 under the prepared one). Since the commit-time check (README "Redefining a limit" and
#    "Waiting for other transactions"), that request's COMMIT waits for the prepared change's hold on the
#    limit's lock and fails with 55P03 after pg_ratelimit.lock_wait (100 ms here): nothing it took stays
#    (e: r8 again has 1 left after ROLLBACK PREPARED).
got=$(q_any <<'SQL'
SET pg_ratelimit.fake_now = '2026-01-01 00:00:00+00';
BEGIN; SELECT rate_limit_define('h', 1000, '1 hour'); SELECT rate_limit_request('r1', 'h'); ROLLBACK;
SELECT 'a', remaining FROM rate_limit_request('r2', 'h');
BEGIN; SAVEPOINT s; UPDATE rate_limit_config SET rate = 1000, capacity = 1000 WHERE name = 'h';
SELECT rate_limit_request('r3', 'h'); ROLLBACK TO s; SELECT 'b', remaining FROM rate_limit_request('r4', 'h'); COMMIT;
DO $$ BEGIN UPDATE rate_limit_config SET rate = 1000, capacity = 1000 WHERE name = 'h';
            PERFORM rate_limit_request('r5', 'h'); RAISE EXCEPTION 'x'; EXCEPTION WHEN OTHERS THEN NULL; END $$;
SELECT 'c', remaining FROM rate_limit_request('r6', 'h');
BEGIN; SELECT rate_limit_define('h', 500, '1 hour'); SELECT rate_limit_request('r7', 'h');
PREPARE TRANSACTION 'review_held';
SET pg_ratelimit.lock_wait = 100;
BEGIN; SELECT 'd', remaining FROM rate_limit_request('r8', 'h'); COMMIT;
RESET pg_ratelimit.lock_wait;
ROLLBACK PREPARED 'review_held';
SELECT 'e', remaining FROM rate_limit_request('r8', 'h');
SQL
)
check "rolled-back definitions never used" "$(printf 'a|1\nb|1\nc|1\nd|1\ne|1')" "$(grep '^[a-e]|' <<<"$got")"
if grep -q 'prepared transactions are disabled' <<<"$got"; then echo "(max_prepared_transactions = 0: 2PC part not run)"
else check "a request's COMMIT during a prepared redefinition: 55P03" 1 \
           "$(grep -c '^ERROR:  rate limit "h" is held by another transaction$' <<<"$got")"
fi

# 4. fake_now cannot be pinned by an ordinary role, even before the library is loaded.
got=$(PGOPTIONS='-c pg_ratelimit.fake_now=2000-01-01' U -c "SELECT set_config('pg_ratelimit.fake_now', '2000-01-01', false)" \
      -c "SELECT 1 FROM rate_limit_check('x')" -c "SHOW pg_ratelimit.fake_now" | tail -n 1)
# With the library in shared_preload_libraries the setting exists before the session starts: the
# connection asking for it is refused outright, which holds as well.
grep -q 'FATAL:  permission denied to set parameter "pg_ratelimit.fake_now"' <<<"$got" && got=""
check "fake_now placeholder refused" "" "$got"

# 5. pg_advisory_lock on the same 64-bit value as a limit's lock does not block cleanup.
got=$(q_any -c "BEGIN" -c "SELECT pg_advisory_xact_lock(hashtextextended('h', 0))" \
            -c "SELECT pg_advisory_xact_lock((hashtextextended('h', 0) >> 32)::int, hashtextextended('h', 0)::int)" \
            -c "SET LOCAL lock_timeout = '1s'" -c "SELECT rate_limit_cleanup('h') >= 0" -c "COMMIT" | grep -c 'lock timeout')
check "pg_advisory_lock does not collide with the limit lock" "0" "$got"

# 6. ACLs after CREATE EXTENSION, and the trigger functions cannot be called directly.
got=$(q -c "SELECT string_agg(proname, ',' ORDER BY proname) FROM pg_proc
            WHERE proname LIKE 'rate_limit%' AND has_function_privilege('review_held_user', oid, 'EXECUTE')")
echo "   (PUBLIC-executable: $got)"
check "refund/reset/define/drop/cleanup not PUBLIC" "" \
      "$(tr ',' '\n' <<<"$got" | grep -E '^rate_limit_(refund|reset|define|drop|cleanup)$')"
got=$(U -c "SELECT rate_limit_config_row()" -c "SELECT rate_limit_config_changed()" | grep -cE 'not called as a trigger|permission denied for function')
check "trigger functions not callable directly (not a trigger, or no EXECUTE)" "2" "$got"

# 7. Limit names and keys: injection-looking strings are data; 'ab'||'c' and 'a'||'bc' stay apart.
got=$(q_any <<'SQL'
SET pg_ratelimit.fake_now = '2026-01-01 00:00:00+00';
SELECT rate_limit_define(E'x''); DROP TABLE rate_limit_state; --%s%n', 1, '1 hour');
SELECT rate_limit_define('ab', 1, '1 hour'), rate_limit_define('a', 1, '1 hour');
SELECT string_agg(allowed::text, ',') FROM (
    SELECT (rate_limit_request('c', 'ab')).allowed UNION ALL SELECT (rate_limit_request('bc', 'a')).allowed
    UNION ALL SELECT (rate_limit_request(E'%s\\', E'x''); DROP TABLE rate_limit_state; --%s%n')).allowed) r;
SELECT count(*) FROM rate_limit_state WHERE limit_name IN ('a', 'ab');
SQL
)
check "names are data; concatenation collisions apart" "$(printf 'true,true,true\n2')" "$(grep -v '^|*$' <<<"$got")"

# 8. Shape changes: handled, or refused with 55000; never a crash or XX000.
before=$(crash_count)
got=$(q_any <<'SQL'
SET pg_ratelimit.fake_now = '2026-01-01 00:00:00+00';
TRUNCATE rate_limit_state;  -- check 7 left 'ab'||'c' and 'a'||'bc', which the exclusion constraint would refuse
SELECT rate_limit_define('shape', 1000, '1 hour');
CREATE FUNCTION outcome(change text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE r text;
BEGIN
    EXECUTE change;
    BEGIN
        PERFORM rate_limit_request('s1', 'shape'); PERFORM rate_limit_request('s' || random(), 'shape');
        PERFORM rate_limit_reset('s1', 'shape'); PERFORM rate_limit_cleanup();
        r := 'works';
    EXCEPTION WHEN OTHERS THEN r := SQLSTATE;
    END;
    RAISE EXCEPTION USING MESSAGE = r, ERRCODE = 'P0004';
EXCEPTION WHEN assert_failure THEN RETURN SQLERRM;
END $$;
SELECT c, outcome(c) FROM unnest(ARRAY[
  'ALTER TABLE rate_limit_state ADD CONSTRAINT ex EXCLUDE USING hash ((limit_name || key) WITH =)',
  'DROP INDEX rate_limit_state_lookup; CREATE INDEX rate_limit_state_lookup ON rate_limit_state USING hash ((key || limit_name))',
  'DROP INDEX rate_limit_state_lookup; CREATE INDEX rate_limit_state_lookup ON rate_limit_state USING hash ((limit_name || key)) WHERE value > 0',
  'ALTER TABLE rate_limit_state DROP CONSTRAINT rate_limit_state_pkey; CREATE UNIQUE INDEX ON rate_limit_state (key, limit_name, shard)',
  'ALTER TABLE rate_limit_state DROP CONSTRAINT rate_limit_state_pkey; CREATE UNIQUE INDEX ON rate_limit_state (limit_name, key, shard) WHERE value > 0',
  'ALTER TABLE rate_limit_state DROP CONSTRAINT rate_limit_state_pkey; CREATE UNIQUE INDEX ON rate_limit_state (limit_name, key COLLATE "POSIX", shard)',
  'ALTER TABLE rate_limit_state DROP CONSTRAINT rate_limit_state_pkey; ALTER TABLE rate_limit_state ADD UNIQUE (limit_name, key, shard) DEFERRABLE',
  'ALTER TABLE rate_limit_state SET UNLOGGED',
  'ALTER TABLE rate_limit_state ALTER COLUMN value DROP NOT NULL',
  'CREATE TABLE fk (l text, k text, s integer, FOREIGN KEY (l, k, s) REFERENCES rate_limit_state)',
  'ALTER TABLE rate_limit_state ADD FOREIGN KEY (limit_name) REFERENCES rate_limit_config (name)',
  'ALTER TABLE rate_limit_state ENABLE ROW LEVEL SECURITY',
  'ALTER TABLE rate_limit_state REPLICA IDENTITY FULL',
  'CLUSTER rate_limit_state USING rate_limit_state_pkey'
]) AS c;
VACUUM FULL rate_limit_state;
SELECT 'vacuum full', allowed FROM rate_limit_request('s1', 'shape');
SQL
)
echo "$got" | sed 's/^/   /'
expected='works
works
works
55000
55000
55000
55000
works
works
55000
55000
works
works
works'
check "shape changes handled or 55000" "$expected" "$(grep '^[A-Z]' <<<"$got" | grep -o '|[^|]*$' | tr -d '|')"
check "VACUUM FULL handled" "vacuum full|t" "$(grep '^vacuum full' <<<"$got")"
check "no crash during shape changes" "$before" "$(crash_count)"

# 9. DROP EXTENSION / CREATE EXTENSION in another schema under a session that used the old one. The
#    session waits for the script between its calls (files, not sleeps: a slow machine cannot reorder them).
tmp=$(mktemp -d)
psql -X -q -At -d "$REVIEW_DB" >"$tmp/log" 2>&1 <<SQL &
SELECT 'before', allowed FROM rate_limit_request('x');
\\! touch $tmp/used
$(until_file "$tmp/recreated")
SELECT 'after', allowed FROM other.rate_limit_request('x');
SELECT 'after', other.rate_limit_cleanup() >= 0;
SQL
bg=$!
wait_for_file "$tmp/used" || echo "the session did not make its first call"
q -c "DROP EXTENSION pg_ratelimit" -c "CREATE SCHEMA other" -c "CREATE EXTENSION pg_ratelimit SCHEMA other"
touch "$tmp/recreated"
wait "$bg"
check "extension re-created in another schema mid-session" "$(printf 'before|t\nafter|t\nafter|t')" "$(grep -v '^$' "$tmp/log")"
rm -rf "$tmp"

[ "$failures" -eq 0 ] && holds "every attack above held"
reproduced "$failures of the attacks above no longer hold"
