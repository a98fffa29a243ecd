#!/usr/bin/env bash
# Attacks on shadow mode (rate_limit_define(..., shadow => true); commits 9fd557e, cb7d26f) that held
# during the review. Each check prints "ok: ..." or "FAILED: ..."; the script fails if any stops holding.
source "$(dirname "$0")/lib.sh"
setup_review shadow_eve
failed=0
ok() { echo "ok: $*"; }
bad() { echo "FAILED: $*"; failed=1; }
as_eve() { psql -X -q -At -d "$REVIEW_DB" -U shadow_eve "$@" 2>&1; }
export PGOPTIONS="${PGOPTIONS:-} -c client_min_messages=warning"

# 1. Bad arguments: shadow NULL (22004) or not a boolean (22P02); on a shadow limit, NaN, infinite,
#    negative, zero, tiny and huge costs, and a cost above the capacity, are errors, never "allowed".
q -c "SELECT rate_limit_define('watch', 2, '1 hour', shadow => true)" >/dev/null
out=$(q_any -v VERBOSITY=sqlstate -c "SELECT rate_limit_define('watch', 2, '1 hour', shadow => NULL)" \
            -c "SELECT rate_limit_define('watch', 2, '1 hour', shadow => 'maybe')")
[ "$(grep -c '^ERROR:  22004' <<<"$out")" = 1 ] && [ "$(grep -c '^ERROR:  22P02' <<<"$out")" = 1 ] &&
    ok "shadow NULL (22004) and 'maybe' (22P02) refused" || bad "shadow argument: $out"
out=$(q_any -v VERBOSITY=sqlstate <<'SQL'
SELECT allowed FROM rate_limit_request('k', 'watch', 'NaN');
SELECT allowed FROM rate_limit_request('k', 'watch', 'Infinity');
SELECT allowed FROM rate_limit_request('k', 'watch', -1);
SELECT allowed FROM rate_limit_request('k', 'watch', 0);
SELECT allowed FROM rate_limit_request('k', 'watch', 1e-300);
SELECT allowed FROM rate_limit_request('k', 'watch', 1e300);
SELECT allowed FROM rate_limit_request('k', 'watch', 3);
SELECT rate_limit_enforce('k', 'watch', 3);
SELECT limited FROM rate_limit_throttle('k', 'watch', 3);
SELECT allowed FROM rate_limit_check('k', 'watch', 'NaN');
SELECT count(*) FROM rate_limit_request_many(ARRAY['a', 'b'], 'watch', ARRAY[1, 'NaN']::float8[]);
SELECT count(*) FROM rate_limit_request_many(ARRAY['a', 'b'], 'watch', ARRAY[1, 3]::float8[]);
SELECT 'a untouched', remaining FROM rate_limit_check('a', 'watch', 0.5);
SQL
)
[ "$(grep -c '^ERROR:  22023' <<<"$out")" = 12 ] && grep -q '^a untouched|1$' <<<"$out" && ! grep -q '^t$' <<<"$out" &&
    ok "12 bad costs on a shadow limit: 22023, nothing allowed, a batch with a bad cost consumed nothing" || bad "bad costs: $out"

# 2. Every decision function lets a would-be denial through, consuming nothing; refunds and settles are
#    never flagged; jitter never delays a shadow-denied call.
out=$(q_any <<'SQL'
SET pg_ratelimit.fake_now = '2026-03-01 10:00:00+00';
SELECT rate_limit_define('j', 2, '1 hour', jitter => '10 minutes', shadow => true);
SELECT allowed FROM rate_limit_request('k', 'j', 2);
SELECT value, ts FROM rate_limit_state WHERE limit_name = 'j' AND key = 'k' \gset s_
SELECT 'req', allowed, shadow_denied, retry_after FROM rate_limit_request('k', 'j');
SELECT 'check', allowed, shadow_denied FROM rate_limit_check('k', 'j');
SELECT 'enforce', rate_limit_enforce('k', 'j');
SELECT 'throttle', limited, retry_after FROM rate_limit_throttle('k', 'j');
SELECT 'many', allowed, shadow_denied FROM rate_limit_request_many(ARRAY['k', 'k'], 'j');
SELECT 'unchanged', value = :s_value AND ts = :'s_ts' FROM rate_limit_state WHERE limit_name = 'j' AND key = 'k';
SELECT 'refund', allowed, shadow_denied FROM rate_limit_refund('k', 'j', 1);
SELECT 'settle', allowed, shadow_denied FROM rate_limit_settle('k', 'j', 1, 2);
SELECT 'settle-back', allowed, shadow_denied FROM rate_limit_settle('k', 'j', 2, 1);
SQL
)
exp="req|t|t|00:00:00 check|t|t enforce| throttle|0|-1 many|t|t many|t|t unchanged|t refund|t|f settle|t|f settle-back|t|f"
got=$(grep -E '^(req|check|enforce|throttle|many|unchanged|refund|settle|settle-back)\|' <<<"$out" | tr '\n' ' ' | sed 's/ $//')
[ "$got" = "$exp" ] && ok "request, check, enforce, throttle, request_many: allowed, flagged, nothing written; refund and settle never flagged; no jitter" ||
    bad "decision functions: got '$got', expected '$exp'"

# 3. Turning shadow on and off keeps every key's state: 4 algorithms x 3 storages x 1 or 3 shards, checked
#    at the same instant before, with shadow on, and with it off again.
diffs=$(q_any <<'SQL' | tail -n 1
SET pg_ratelimit.fake_now = '2026-03-01 10:17:00+00';
CREATE TEMP TABLE kinds AS SELECT format('t_%s_%s_%s', a, s, sh) AS name, a, s, sh
  FROM unnest(ARRAY['token_bucket', 'gcra', 'fixed_window', 'sliding_window']) a,
       unnest(ARRAY['durable', 'unlogged', 'memory']) s, unnest(ARRAY[1, 3]) sh;
SELECT count(rate_limit_define(name, 30, '1 hour', a, storage => s, shards => sh)) FROM kinds;
SELECT count(*) FROM kinds, LATERAL rate_limit_request('key', name, 7) r;
SET pg_ratelimit.fake_now = '2026-03-01 10:20:00+00';
CREATE TEMP TABLE before AS SELECT name, r.* FROM kinds, LATERAL rate_limit_check('key', name, 0.5) r;
SELECT count(rate_limit_define(name, 30, '1 hour', a, storage => s, shards => sh, shadow => true)) FROM kinds;
CREATE TEMP TABLE mid AS SELECT name, r.* FROM kinds, LATERAL rate_limit_check('key', name, 0.5) r;
SELECT count(rate_limit_define(name, 30, '1 hour', a, storage => s, shards => sh, shadow => false)) FROM kinds;
CREATE TEMP TABLE after AS SELECT name, r.* FROM kinds, LATERAL rate_limit_check('key', name, 0.5) r;
SELECT count(*) FILTER (WHERE (b.remaining, b.reset_after) IS DISTINCT FROM (m.remaining, m.reset_after)
                           OR (b.remaining, b.reset_after) IS DISTINCT FROM (a.remaining, a.reset_after))
       || '/' || count(*)
  FROM before b JOIN mid m USING (name) JOIN after a USING (name);
SQL
)
[ "$diffs" = "0/24" ] && ok "shadow on and off keeps the state of 24 kinds of limit" || bad "toggling changed keys: $diffs"
q -c "SELECT rate_limit_drop(name) FROM rate_limit_config WHERE name LIKE 't\_%'" >/dev/null

# 4. Privileges and look-alikes: PUBLIC cannot turn a limit into shadow mode (define, UPDATE, INSERT), nor
#    give units back; a temp rate_limit_config with shadow = true first on its search_path changes nothing.
q -c "SELECT rate_limit_define('real', 2, '1 day')" >/dev/null
out=$(as_eve -c "SELECT rate_limit_define('real', 2, '1 day', shadow => true)" \
             -c "UPDATE rate_limit_config SET shadow = true" \
             -c "INSERT INTO rate_limit_config (name, algorithm, rate, period, capacity, shards, storage, epoch, jitter, shadow) VALUES ('x', 'token_bucket', 1, '1 hour', 1, 1, 'durable', 0, '0', true)" \
             -c "SELECT rate_limit_override('eve', 'real', 1e6)" \
             -c "SELECT rate_limit_settle('eve', 'real', 2, 0)" -c "SELECT rate_limit_refund('eve', 'real', 2)")
[ "$(grep -c 'permission denied' <<<"$out")" = 6 ] && ok "PUBLIC: 6 ways to switch a limit to shadow or mint units refused" || bad "PUBLIC: $out"
out=$(as_eve <<'SQL'
CREATE TEMP TABLE rate_limit_config (LIKE public.rate_limit_config);
INSERT INTO pg_temp.rate_limit_config SELECT * FROM public.rate_limit_config;
UPDATE pg_temp.rate_limit_config SET shadow = true;
SET search_path = pg_temp, public;
SELECT 'first', allowed FROM rate_limit_request('eve', 'real', 2);
SELECT 'second', allowed, shadow_denied FROM rate_limit_request('eve', 'real', 2);
SQL
)
grep -q '^second|f|f' <<<"$out" && ok "a temp look-alike rate_limit_config with shadow = true is ignored" || bad "look-alike: $out"

# 5. DDL on the new column and attribute: a NULL shadow (after DROP NOT NULL) is refused by the row
#    trigger (23502); another type, a dropped or renamed column, a changed decision type: 55000; no crash.
before=$(crash_count)
out=$(q_any -v VERBOSITY=sqlstate <<'SQL'
ALTER TABLE rate_limit_config ALTER shadow DROP NOT NULL;
UPDATE rate_limit_config SET shadow = NULL WHERE name = 'real';
INSERT INTO rate_limit_config (name, algorithm, rate, period, capacity, shards, storage, epoch, jitter, shadow) VALUES ('hand', 'token_bucket', 1, '1 hour', 1, 1, 'durable', 0, '0', NULL);
ALTER TABLE rate_limit_config ALTER shadow SET NOT NULL;
BEGIN; ALTER TABLE rate_limit_config ALTER shadow TYPE text; SELECT allowed FROM rate_limit_request('k', 'real'); ROLLBACK;
BEGIN; ALTER TABLE rate_limit_config DROP COLUMN shadow; SELECT allowed FROM rate_limit_request('k', 'real'); ROLLBACK;
BEGIN; ALTER TABLE rate_limit_config RENAME shadow TO dry_run; SELECT allowed FROM rate_limit_request('k', 'real'); ROLLBACK;
BEGIN; ALTER TYPE rate_limit_decision DROP ATTRIBUTE shadow_denied; SELECT allowed FROM rate_limit_request('k', 'real'); ROLLBACK;
BEGIN; ALTER TYPE rate_limit_decision ALTER ATTRIBUTE shadow_denied TYPE int; SELECT allowed FROM rate_limit_request('k', 'real'); ROLLBACK;
SELECT 'after', allowed FROM rate_limit_request('k', 'real');
SQL
)
[ "$(grep -c '^ERROR:  23502' <<<"$out")" = 2 ] && [ "$(grep -c '^ERROR:  55000' <<<"$out")" = 5 ] &&
    grep -q '^after|t' <<<"$out" && [ "$(crash_count)" = "$before" ] &&
    ok "NULL shadow refused (23502 x2); column and type changes refused (55000 x5); no crash" || bad "DDL: $out"

# 6. Cache invalidation: a session that cached the limit sees a flip made by another session (by
#    rate_limit_define, by UPDATE, and by an UPDATE under session_replication_role = replica) at its next
#    statement; a key's cached override follows the limit's flag.
q -c "SELECT rate_limit_define('flip', 1, '1 day', shadow => true)" -c "SELECT rate_limit_override('vip', 'flip', 2)" >/dev/null
out=$(q_any <<SQL
SELECT 'a', allowed, shadow_denied FROM rate_limit_request('k', 'flip', 1);
SELECT 'b', allowed, shadow_denied FROM rate_limit_request('k', 'flip', 1);
SELECT 'v', allowed, shadow_denied FROM rate_limit_request('vip', 'flip', 2);
\! psql -X -q -d $REVIEW_DB -c "SELECT rate_limit_define('flip', 1, '1 day')" >/dev/null
SELECT 'c', allowed, shadow_denied FROM rate_limit_request('k', 'flip', 1);
SELECT 'w', allowed, shadow_denied FROM rate_limit_request('vip', 'flip', 1);
\! psql -X -q -d $REVIEW_DB -c "UPDATE rate_limit_config SET shadow = true WHERE name = 'flip'" >/dev/null
SELECT 'd', allowed, shadow_denied FROM rate_limit_request('k', 'flip', 1);
\! psql -X -q -d $REVIEW_DB -c "SET session_replication_role = replica" -c "UPDATE rate_limit_config SET shadow = false WHERE name = 'flip'" >/dev/null
SELECT 'e', allowed, shadow_denied FROM rate_limit_request('k', 'flip', 1);
SQL
)
got=$(grep -E '^[abvcwde]\|' <<<"$out" | tr '\n' ' ' | sed 's/ $//')
[ "$got" = "a|t|f b|t|t v|t|f c|f|f w|f|f d|t|t e|f|f" ] &&
    ok "flips by define, UPDATE and replica-mode UPDATE reach a session's cached limit and override" || bad "cache: $got"

# 7. Two-phase commit: a prepared flip changes nothing until COMMIT PREPARED; ROLLBACK PREPARED undoes it.
#    While it is prepared, a request decides under the unflagged definition (prepared|f|f) and so does a
#    check; since the commit-time check (README "Redefining a limit" and "Waiting for other transactions"),
#    the request's COMMIT waits for the prepared change's hold on the limit's lock and fails with 55P03
#    after pg_ratelimit.lock_wait (100 ms here).
q -c "SELECT rate_limit_define('twopc', 1, '1 day')" -c "SELECT rate_limit_request('k', 'twopc')" >/dev/null
out=$(q_any -v VERBOSITY=sqlstate <<'SQL'
BEGIN; SELECT rate_limit_define('twopc', 1, '1 day', shadow => true); PREPARE TRANSACTION 'shadow_on';
SET pg_ratelimit.lock_wait = 100;
BEGIN; SELECT 'prepared', allowed, shadow_denied FROM rate_limit_request('k', 'twopc'); COMMIT;
RESET pg_ratelimit.lock_wait;
SELECT 'prepared check', allowed, shadow_denied FROM rate_limit_check('k', 'twopc');
ROLLBACK PREPARED 'shadow_on';
SELECT 'rolled back', allowed, shadow_denied FROM rate_limit_request('k', 'twopc');
BEGIN; SELECT rate_limit_define('twopc', 1, '1 day', shadow => true); PREPARE TRANSACTION 'shadow_on';
COMMIT PREPARED 'shadow_on';
SELECT 'committed', allowed, shadow_denied FROM rate_limit_request('k', 'twopc');
SQL
)
got=$(grep -E '^(prepared|prepared check|rolled back|committed)\||^ERROR' <<<"$out" | tr '\n' ' ' | sed 's/ $//')
[ "$got" = "prepared|f|f ERROR:  55P03 prepared check|f|f rolled back|f|f committed|t|t" ] &&
    ok "2PC: a prepared flip applies at COMMIT PREPARED only (a request's COMMIT meanwhile: 55P03)" || bad "2PC: $got"

# 8. A backend killed inside the transaction that flips a limit leaves it as it was.
q -c "SELECT rate_limit_define('killed', 1, '1 day')" -c "SELECT rate_limit_request('k', 'killed')" >/dev/null
q_any -c "BEGIN" -c "SELECT rate_limit_define('killed', 1, '1 day', shadow => true)" -c "SELECT pg_sleep(30)" >/dev/null &
victim_shell=$!
pid=""
for _ in $(seq 1 50); do
    pid=$(q -c "SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND query LIKE '%pg_sleep(30)%' AND pid <> pg_backend_pid()")
    [ -n "$pid" ] && break
    sleep 0.1
done
[ -n "$pid" ] && q -c "SELECT pg_terminate_backend($pid)" >/dev/null
wait "$victim_shell"
got=$(q -c "SELECT allowed, shadow_denied FROM rate_limit_request('k', 'killed')")
[ -n "$pid" ] && [ "$got" = "f|f" ] && ok "a killed backend's uncommitted flip is not applied" || bad "killed flip: pid '$pid', got $got"

# 9. Dump and restore keep the flag (the shipped default limit included).
q -c "SELECT rate_limit_define('default', 120, '1 minute', shadow => true)" >/dev/null
restored=${REVIEW_DB}_restored
psql -X -q -d postgres -c "DROP DATABASE IF EXISTS $restored" -c "CREATE DATABASE $restored" >/dev/null
pg_dump -d "$REVIEW_DB" | psql -X -q -d "$restored" >/dev/null 2>&1
got=$(psql -X -At -d "$restored" -c "SELECT string_agg(name || '=' || shadow, ' ' ORDER BY name) FROM rate_limit_config WHERE name IN ('default', 'flip', 'j', 'real', 'watch')")
psql -X -q -d postgres -c "DROP DATABASE IF EXISTS $restored WITH (FORCE)" >/dev/null
[ "$got" = "default=true flip=false j=true real=false watch=true" ] && ok "dump and restore keep every limit's flag" || bad "restore: $got"

# 10. Concurrency: 8 sessions x 40 requests of one key of a shadow limit of 50, at every isolation level,
#     durable and memory: every call allowed, exactly 50 unflagged, the key exhausted but not overdrawn.
q -c "CREATE TABLE tally (lim text, allowed bool, flagged bool)" -c "GRANT INSERT ON tally TO PUBLIC" \
  -c "SELECT rate_limit_define('conc', 50, '1 day', shadow => true)" \
  -c "SELECT rate_limit_define('conc_mem', 50, '1 day', storage => 'memory', shadow => true)" >/dev/null
script=$(mktemp)
for level in 'read\ committed' 'repeatable\ read' serializable; do
    for lim in conc conc_mem; do
        echo "INSERT INTO tally SELECT '$lim', allowed, shadow_denied FROM rate_limit_request('hot', '$lim');" >"$script"
        q -c "TRUNCATE tally" -c "SELECT rate_limit_reset('hot', '$lim')" >/dev/null
        PGOPTIONS="${PGOPTIONS:-} -c default_transaction_isolation=$level" \
            pgbench -n -d "$REVIEW_DB" -c 8 -j 2 -t 40 --max-tries=100 -f "$script" >/dev/null 2>&1
        got=$(q -c "SELECT count(*) FILTER (WHERE NOT allowed), count(*) FILTER (WHERE NOT flagged), count(*) > 250 FROM tally" \
                -c "SELECT remaining FROM rate_limit_check('hot', '$lim', 0.000001)" | tr '\n' '|')
        [ "$got" = "0|50|t|0|" ] && ok "8 sessions, ${level/\\/}, $lim: all allowed, 50 unflagged, key at 0" ||
            bad "8 sessions, ${level/\\/}, $lim: denied|unflagged|enough rows|remaining = $got"
    done
done
rm -f "$script"
q -c "SELECT rate_limit_drop('conc_mem')" >/dev/null

[ "$(crash_count)" = 0 ] || bad "crashes in the server log: $(crash_count)"
[ $failed = 0 ] || { echo "REPRODUCED: an attack on shadow mode no longer holds"; exit 1; }
holds "attacks on shadow mode held (bad arguments, every decision function, flips keeping state, privileges, look-alikes, DDL, cache invalidation, 2PC, killed backends, dump and restore, 8 sessions at every isolation level)"
