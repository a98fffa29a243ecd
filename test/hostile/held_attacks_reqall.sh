#!/usr/bin/env bash
# Attacks on rate_limit_request_all (several limits, all or nothing; issue 12 item 1; reviewed at bd2d0ac)
# that held. Each check prints "ok: ..." or "FAILED: ..."; the script fails if any stops holding.
# Needs the server of test/hostile/run.sh (shared_preload_libraries = 'pg_ratelimit', max_prepared_transactions
# >= 1).
source "$(dirname "$0")/lib.sh"
setup_review review_reqall_eve
failed=0
ok() { echo "ok: $*"; }
bad() { echo "FAILED: $*"; failed=1; }
drop_memory() {
    q -c "SELECT rate_limit_drop(name) FROM rate_limit_config WHERE storage = 'memory'" >/dev/null 2>&1
    cleanup_review
}
trap drop_memory EXIT
# What a request of 1 would leave for every (limit, key) of the checks: equal before and after = nothing taken.
q <<'SQL' >/dev/null || exit 2
SELECT rate_limit_define(l || s, r, p, storage => s, shards => sh)
  FROM unnest(ARRAY['durable', 'unlogged', 'memory']) AS s,
       (VALUES ('a_', 4, '1 hour'::interval, 1), ('b_', 2, '1 hour', 1), ('h_', 8, '1 hour', 4)) AS v(l, r, p, sh);
SELECT rate_limit_override('vip', 'b_' || s, 100) FROM unnest(ARRAY['durable', 'unlogged', 'memory']) AS s;
SELECT rate_limit_define('sh_durable', 1, '1 hour', shadow => true);
-- Key d exhausted under every limit: a triple on it is denied. (Costs of one (limit, key) that add up past
-- its capacity are refused with 22023 instead, since the fix of f46.)
SELECT count(*) FROM rate_limit_config c, generate_series(1, 8) g WHERE c.name ~ '^[abh]_'
   AND (rate_limit_request('d', c.name, 1 + 0 * g)).allowed;  -- g: a call per row, not one per limit
CREATE FUNCTION state_of() RETURNS text LANGUAGE sql AS $$
    SELECT string_agg(format('%s/%s=%s', name, k, (rate_limit_check(k, name)).remaining), ' ' ORDER BY name, k)
      FROM rate_limit_config, unnest(ARRAY['u', 'vip', 'x']) AS k
$$;
SQL

# 1. A denial anywhere takes nothing anywhere: every storage, shards, overrides, a shadow limit, the same
#    (limit, key) repeated, the denied triple first, last or in the middle, at every isolation level.
before=$(q -c "SELECT state_of()")
out=""
for iso in 'READ COMMITTED' 'REPEATABLE READ' 'SERIALIZABLE'; do
    out+=$(q_any -v VERBOSITY=sqlstate <<SQL
BEGIN ISOLATION LEVEL $iso;
SELECT allowed FROM rate_limit_request_all(ARRAY['u', 'vip', 'x', 'u', 'u', 'u', 'u', 'd'],
    ARRAY['a_durable', 'b_unlogged', 'h_memory', 'sh_durable', 'b_memory', 'b_durable', 'b_durable', 'a_unlogged'],
    ARRAY[1, 50, 2, 1, 1, 1, 0.5, 1]) WHERE position = 0;
SELECT allowed FROM rate_limit_request_all(ARRAY['u', 'u', 'd', 'x', 'x'],
    ARRAY['b_durable', 'b_durable', 'b_durable', 'h_unlogged', 'a_memory'], ARRAY[1, 0.5, 1, 2, 1]) WHERE position = 0;
SELECT allowed FROM rate_limit_request_all(ARRAY['u', 'u', 'd', 'vip'],
    ARRAY['a_memory', 'a_memory', 'b_memory', 'h_durable'], ARRAY[3, 1, 1, 2]) WHERE position = 0;
SELECT allowed FROM rate_limit_request_all(ARRAY['x', 'x', 'x', 'd'], ARRAY['h_memory', 'h_memory', 'h_memory', 'h_memory'], ARRAY[2, 2, 2, 2]) WHERE position = 0;
COMMIT;
SQL
)$'\n'
done
after=$(q -c "SELECT state_of()")
[ "$(grep -c '^f$' <<<"$out")" = 12 ] && ! grep -q ERROR <<<"$out" && [ "$before" = "$after" ] &&
    ok "12 denied calls (3 isolation levels x 4 shapes: storages, shards, overrides, shadow, repeats) took nothing" ||
    bad "denials took something: $out / before $before / after $after"

# 2. Repeated (limit, key) in one call sees the earlier triples' consumption at every isolation level (table
#    and memory): capacity 4 with 1 taken, three triples allowed and the fourth denied; then three taken.
out=""
for s in durable unlogged memory; do for iso in 'READ COMMITTED' 'REPEATABLE READ' 'SERIALIZABLE'; do
    k="rep_${s}_${iso// /_}"
    out+=$(q -c "BEGIN ISOLATION LEVEL $iso" -c "SELECT (rate_limit_request('$k', 'a_$s')).allowed" \
        -c "SELECT string_agg(left(allowed::text, 1), '' ORDER BY position) FROM rate_limit_request_all(ARRAY['$k', '$k', '$k', '$k'], ARRAY['a_$s', 'a_$s', 'a_$s', 'a_$s'])" \
        -c "SELECT string_agg(left(allowed::text, 1), '' ORDER BY position) FROM rate_limit_request_all(ARRAY['$k', '$k', '$k'], ARRAY['a_$s', 'a_$s', 'a_$s'])" \
        -c "SELECT (rate_limit_check('$k', 'a_$s')).allowed" -c COMMIT | tr '\n' ' ')
done; done
[ "$out" = "$(printf 't ftttf tttt f %.0s' 1 2 3 4 5 6 7 8 9)" ] &&
    ok "repeats decided in turn on every storage at every isolation level (4 of 3 denied, 3 of 3 taken)" || bad "repeats: $out"

# 3. Bad input at every argument: a SQLSTATE each, never XX000, nothing taken, even with memory limits first.
before=$(q -c "SELECT state_of()")
out=$(q_any -v VERBOSITY=sqlstate <<'SQL'
SELECT * FROM rate_limit_request_all(NULL, ARRAY['a_memory']);
SELECT * FROM rate_limit_request_all(ARRAY['u'], NULL);
SELECT * FROM rate_limit_request_all(ARRAY['u', 'u'], ARRAY['a_memory']);
SELECT * FROM rate_limit_request_all(ARRAY['u'], ARRAY['a_memory'], ARRAY[1, 1]::float8[]);
SELECT * FROM rate_limit_request_all(ARRAY['u'], ARRAY['a_memory'], ARRAY[]::float8[]);
SELECT * FROM rate_limit_request_all(ARRAY[]::text[], ARRAY[]::text[], ARRAY[]::float8[]);
SELECT * FROM rate_limit_request_all(ARRAY['u', NULL], ARRAY['a_memory', 'b_memory']);
SELECT * FROM rate_limit_request_all(ARRAY['u', 'u'], ARRAY['a_memory', NULL]);
SELECT * FROM rate_limit_request_all(ARRAY['u', 'u'], ARRAY['a_memory', '']);
SELECT * FROM rate_limit_request_all(ARRAY['u', 'u'], ARRAY['a_memory', 'A_MEMORY']);
SELECT * FROM rate_limit_request_all(ARRAY['u', 'u'], ARRAY['a_memory', repeat('n', 300)]);
SELECT * FROM rate_limit_request_all(ARRAY['u', repeat('k', 1025)], ARRAY['a_memory', 'b_memory']);
SELECT * FROM rate_limit_request_all(ARRAY['u', 'u'], ARRAY['a_memory', 'b_memory'], ARRAY[1, 'NaN']::float8[]);
SELECT * FROM rate_limit_request_all(ARRAY['u', 'u'], ARRAY['a_memory', 'b_memory'], ARRAY[1, 'Infinity']::float8[]);
SELECT * FROM rate_limit_request_all(ARRAY['u', 'u'], ARRAY['a_memory', 'b_memory'], ARRAY[1, '-Infinity']::float8[]);
SELECT * FROM rate_limit_request_all(ARRAY['u', 'u'], ARRAY['a_memory', 'b_memory'], ARRAY[1, 0]::float8[]);
SELECT * FROM rate_limit_request_all(ARRAY['u', 'u'], ARRAY['a_memory', 'b_memory'], ARRAY[1, '-0']::float8[]);
SELECT * FROM rate_limit_request_all(ARRAY['u', 'u'], ARRAY['a_memory', 'b_memory'], ARRAY[1, -1]::float8[]);
SELECT * FROM rate_limit_request_all(ARRAY['u', 'u'], ARRAY['a_memory', 'b_memory'], ARRAY[1, 1e-300]::float8[]);
SELECT * FROM rate_limit_request_all(ARRAY['u', 'u'], ARRAY['a_memory', 'b_memory'], ARRAY[1, 1e300]::float8[]);
SELECT * FROM rate_limit_request_all(ARRAY['u', 'u'], ARRAY['a_memory', 'h_memory'], ARRAY[1, 3]::float8[]);
SELECT * FROM rate_limit_request_all(ARRAY['u', 'vip'], ARRAY['a_memory', 'b_memory'], ARRAY[1, 101]::float8[]);
SELECT * FROM rate_limit_request_all(ARRAY[['u', 'u']], ARRAY[['a_memory', 'b_memory']]);
SELECT * FROM rate_limit_request_all(ARRAY['u', 'u'], ARRAY['a_memory', 'b_memory'], ARRAY[[1, 1]]::float8[]);
SELECT * FROM rate_limit_request_all(ARRAY['u', 'u'], ARRAY['a_memory', 'b_memory'], ARRAY[NULL, NULL]::float8[]) WHERE false;
SQL
)
after=$(q -c "SELECT state_of()")
errors=$(grep -c '^ERROR' <<<"$out")
[ "$errors" = 24 ] && ! grep -q 'XX000' <<<"$out" && [ "$before" = "$after" ] &&
    ok "24 bad calls (NULLs, lengths, empty, unknown/long names, long key, NaN/inf/0/-0/negative/tiny/huge costs, over a shard or an override, 2-D): $(grep '^ERROR' <<<"$out" | sort | uniq -c | tr -s ' \n' ' '); nothing taken" ||
    bad "bad input: $errors errors: $out / $before / $after"

# 4. Savepoints and PL/pgSQL EXCEPTION blocks: a rollback to a savepoint undoes an allowed call's table units;
#    an error after an allowed call inside a block is caught and the block's writes (the call's) undone.
out=$(q_any -v VERBOSITY=sqlstate <<'SQL'
BEGIN;
SAVEPOINT s;
SELECT allowed FROM rate_limit_request_all(ARRAY['sp', 'sp'], ARRAY['a_durable', 'b_unlogged'], ARRAY[4, 2]) WHERE position = 0;
ROLLBACK TO s;
SELECT 'after rollback', (rate_limit_check('sp', 'a_durable')).remaining, (rate_limit_check('sp', 'b_unlogged')).remaining;
DO $$ BEGIN
    PERFORM * FROM rate_limit_request_all(ARRAY['sp', 'sp'], ARRAY['a_durable', 'b_unlogged'], ARRAY[4, 2]);
    PERFORM 1 / 0;
EXCEPTION WHEN division_by_zero THEN RAISE NOTICE 'caught';
END $$;
SELECT 'after block', (rate_limit_check('sp', 'a_durable')).remaining, (rate_limit_check('sp', 'b_unlogged')).remaining;
DO $$ BEGIN
    PERFORM * FROM rate_limit_request_all(ARRAY['sp', 'sp'], ARRAY['a_durable', 'nope'], ARRAY[4, 2]);
EXCEPTION WHEN undefined_object THEN RAISE NOTICE 'caught unknown';
END $$;
SELECT 'allowed after all', allowed FROM rate_limit_request_all(ARRAY['sp', 'sp'], ARRAY['a_durable', 'b_unlogged'], ARRAY[4, 2]) WHERE position = 0;
COMMIT;
SELECT 'committed', (rate_limit_check('sp', 'a_durable')).allowed, (rate_limit_check('sp', 'b_unlogged')).allowed;
SQL
)
grep -q '^after rollback|3|1$' <<<"$out" && grep -q '^after block|3|1$' <<<"$out" && grep -q '^allowed after all|t$' <<<"$out" &&
    grep -q '^committed|f|f$' <<<"$out" && ! grep -q '^ERROR' <<<"$out" &&
    ok "savepoint rollback, an error caught after the call, an unknown limit caught: each undone; then allowed and committed" ||
    bad "savepoints: $out"

# 5. A call waiting for a row lock that is cancelled (statement_timeout) or whose backend is terminated
#    takes nothing: the triple already decided is rolled back. The waiting calls run with
#    pg_ratelimit.lock_wait = 0 (no bound of its own): at the default (1 s) a wait longer than that ends
#    with 55P03 (README "Waiting for other transactions"), before the cancel or the terminate this attack
#    is about. The holder keeps w's row until the waiter is done with (statement_timeout) or is waiting
#    (polled in pg_stat_activity, then terminated), not for a fixed time.
tmp=$(mktemp -d)
q -c "SELECT rate_limit_request('w', 'b_durable')" -c "SELECT rate_limit_request('w', 'a_durable')" >/dev/null
hold_w() {  # holds w's row of b_durable, in a transaction rolled back once $tmp/go exists
    rm -f "$tmp/held" "$tmp/go"
    q_any -c "BEGIN" -c "SELECT allowed FROM rate_limit_request('w', 'b_durable')" -c "\! touch $tmp/held" \
          -c "$(until_file "$tmp/go")" -c "ROLLBACK" >/dev/null &
    wait_for_file "$tmp/held" || bad "cancel/terminate: the holder did not take w"
}
hold_w
out=$(PGOPTIONS="-c pg_ratelimit.lock_wait=0" q_any -v VERBOSITY=sqlstate -c "SET statement_timeout = 500" \
    -c "SELECT allowed FROM rate_limit_request_all(ARRAY['w', 'w', 'w'], ARRAY['a_durable', 'b_durable', 'a_memory'])")
touch "$tmp/go"
wait
hold_w
PGOPTIONS="-c pg_ratelimit.lock_wait=0" PGAPPNAME=reqall_victim q_any \
    -c "SELECT allowed FROM rate_limit_request_all(ARRAY['w', 'w', 'w'], ARRAY['a_durable', 'b_durable', 'a_memory'])" >/dev/null &
victim=$!
poll_until "SELECT count(*) = 1 FROM pg_stat_activity WHERE application_name = 'reqall_victim' AND wait_event_type = 'Lock'" ||
    bad "cancel/terminate: the victim did not wait for w"
killed=$(q -c "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE application_name = 'reqall_victim'")
wait "$victim"
touch "$tmp/go"
wait
rm -rf "$tmp"
left=$(q -c "SELECT (rate_limit_check('w', 'a_durable')).remaining, (rate_limit_check('w', 'b_durable')).remaining, (rate_limit_check('w', 'a_memory')).remaining")
grep -q '^ERROR:  57014' <<<"$out" && [ "$killed" = 1 ] && [ "$left" = "2|0|3" ] &&
    ok "cancelled and terminated while waiting for the second row: nothing taken (a_durable 3 left, a_memory 4)" ||
    bad "cancel/terminate: $out / killed $killed / left $left"

# 6. 2PC: a call prepared and committed takes once; one prepared and rolled back takes nothing (memory
#    triples are not transactional: taken at the call, as rate_limit_request).
out=$(q_any -v VERBOSITY=sqlstate <<'SQL'
SET lock_timeout = 5000;
BEGIN;
SELECT allowed FROM rate_limit_request_all(ARRAY['p', 'p'], ARRAY['a_durable', 'b_unlogged']) WHERE position = 0;
PREPARE TRANSACTION 'reqall_1';
BEGIN;
SELECT allowed FROM rate_limit_request_all(ARRAY['p2', 'p2'], ARRAY['a_durable', 'b_unlogged'], ARRAY[3, 1]) WHERE position = 0;
PREPARE TRANSACTION 'reqall_2';
COMMIT PREPARED 'reqall_1';
ROLLBACK PREPARED 'reqall_2';
SELECT 'left', (rate_limit_check('p', 'a_durable')).remaining, (rate_limit_check('p', 'b_unlogged')).remaining,
       (rate_limit_check('p2', 'a_durable')).remaining, (rate_limit_check('p2', 'b_unlogged')).remaining;
SQL
)
grep -q '^left|2|0|3|1$' <<<"$out" && ! grep -q '^ERROR' <<<"$out" && ok "2PC: committed once, rolled back none" || bad "2PC: $out"

# 7. Privileges: a role without grants decides (EXECUTE for PUBLIC) but cannot write the state or config
#    directly, and a temp look-alike rate_limit_state/rate_limit_config of its own changes nothing.
out=$(q_any -U review_reqall_eve -v VERBOSITY=sqlstate <<'SQL'
CREATE TEMP TABLE rate_limit_config (name text, rate float8);
CREATE TEMP TABLE rate_limit_state (limit_name text, key text, value float8);
SET search_path = pg_temp, public;
SELECT 'eve', allowed FROM rate_limit_request_all(ARRAY['e', 'e'], ARRAY['b_durable', 'b_durable'], ARRAY[1, 1]) WHERE position = 0;
SELECT 'eve2', allowed FROM rate_limit_request_all(ARRAY['e', 'e'], ARRAY['b_durable', 'b_durable'], ARRAY[1, 1]) WHERE position = 0;
UPDATE public.rate_limit_state SET value = 100;
UPDATE public.rate_limit_config SET rate = 100;
SQL
)
left=$(q -c "SELECT (rate_limit_check('e', 'b_durable')).allowed")
grep -q '^eve|t$' <<<"$out" && grep -q '^eve2|f$' <<<"$out" && [ "$(grep -c '^ERROR:  42501' <<<"$out")" = 2 ] && [ "$left" = f ] &&
    ok "a role without grants: decided against the real tables (2 of 2 allowed, then 2 more denied), direct writes refused (42501 x2)" ||
    bad "privileges: $out / $left"

# 8. Eight sessions, crossing orders (a, b), (b, a) and (b, a, h sharded) on one key, READ COMMITTED: no error
#    (no deadlock), and each limit admitted exactly as many calls as the call-level decisions said. The
#    sessions run with pg_ratelimit.lock_wait = 0: a wait over 1 s for another call's row on a loaded machine
#    would end in 55P03 (README "Waiting for other transactions"), which is not what this checks; a deadlock
#    still fails with 40P01.
q -c "SELECT rate_limit_define('x8a', 60, '1 day')" -c "SELECT rate_limit_define('x8b', 60, '1 day')" \
  -c "SELECT rate_limit_define('x8h', 200, '1 day', shards => 4)" -c "CREATE TABLE admitted (n int)" \
  -c "GRANT INSERT ON admitted TO PUBLIC" >/dev/null
tmp=$(mktemp -d)
cat >"$tmp/ab.sql" <<'SQL'
INSERT INTO admitted SELECT 1 FROM rate_limit_request_all(ARRAY['k', 'k'], ARRAY['x8a', 'x8b']) WHERE position = 0 AND allowed;
SQL
cat >"$tmp/ba.sql" <<'SQL'
INSERT INTO admitted SELECT 1 FROM rate_limit_request_all(ARRAY['k', 'k', 'k'], ARRAY['x8h', 'x8b', 'x8a']) WHERE position = 0 AND allowed;
SQL
bench=$(PGOPTIONS="${PGOPTIONS:-} -c pg_ratelimit.lock_wait=0" pgbench -n -c 8 -j 2 -t 25 -f "$tmp/ab.sql" -f "$tmp/ba.sql" "$REVIEW_DB" 2>&1)
rm -rf "$tmp"
admitted=$(q -c "SELECT count(*) FROM admitted")
left=$(q -c "SELECT (rate_limit_check('k', 'x8a')).remaining + 1, (rate_limit_check('k', 'x8b')).remaining + 1")
grep -q 'number of failed transactions: 0' <<<"$bench" && [ "$admitted" = 60 ] && [ "$left" = "1|1" ] &&
    ok "8 sessions x 25 crossing calls: no failure, 60 admitted of 60, each limit consumed 60" ||
    bad "8 sessions: admitted $admitted, left $left: $(grep -i 'fail\|error' <<<"$bench" | head -3)"

[ $failed -eq 0 ] && holds "every rate_limit_request_all attack above" || { echo "REPRODUCED: an attack no longer holds"; exit 1; }
