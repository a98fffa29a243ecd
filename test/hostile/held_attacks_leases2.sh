#!/usr/bin/env bash
# Attacks on the fixes of the twelfth review's lease findings (f48-f58; commits 237d800 and 7166686) that
# held during the thirteenth review: the period refusal through rate_limit_define, a hostile role's ways
# around it, a renamed schema, the WARNING for an autocommit transaction lease, expired session leases
# given back across limits, and the statistics of acquires under concurrency. Each check prints "ok: ..."
# or "FAILED: ..."; the script fails if any stops holding. (The attacks that did not hold: f59-f61.)
here=$(dirname "$0")
source "$here/lib.sh"
setup_review lease2_eve
REVIEW_TMP=$(mktemp -d)
chmod 755 "$REVIEW_TMP"
export PGOPTIONS="-c client_min_messages=error"  # autocommit probes warn that their lease ends at once
failed=0
ok() { echo "ok: $*"; }
bad() { echo "FAILED: $*"; failed=1; }
as() { local role=$1; shift; psql -X -q -At -d "$REVIEW_DB" -U "$role" "$@" 2>&1; }
# Another session's autocommit acquire of (key, limit): t or f.
probe() { psql -X -q -At -d "$REVIEW_DB" -c "SELECT allowed FROM rate_limit_acquire('$1', '$2')" 2>&1; }
q -c "SELECT rate_limit_define('one', rate => 1, period => '1 hour', algorithm => 'concurrency')" >/dev/null || exit 2

# 1. rate_limit_define: the same period spelled otherwise is accepted; another one is refused (55000) even
#    when the call also flips shadow mode and raises N, and nothing of that call applies; the held session
#    lease still counts for another session.
out=$(q_any -v VERBOSITY=sqlstate -c "SELECT allowed FROM rate_limit_acquire('acme', 'one', 'session')" \
    -c "SELECT 'same' FROM rate_limit_define('one', rate => 1, period => '60 minutes', algorithm => 'concurrency')" \
    -c "SELECT 'same' FROM rate_limit_define('one', rate => 1, period => '3600 seconds', algorithm => 'concurrency')" \
    -c "SELECT rate_limit_define('one', rate => 3, period => '2 hours', algorithm => 'concurrency', shadow => true)" \
    -c "SELECT rate_limit_define('one', rate => 1, period => '59 minutes 59.999999 seconds', algorithm => 'concurrency')" \
    -c "SELECT rate || ' ' || period || ' ' || shadow FROM rate_limit_config WHERE name = 'one'" \
    -c "\\! psql -X -q -At -c \"SELECT allowed FROM rate_limit_acquire('acme', 'one')\"" | tr '\n' '|')
[ "$out" = "t|same|same|ERROR:  55000|ERROR:  55000|1 01:00:00 false|f|" ] &&
    ok "define: same period accepted, others refused (55000), nothing applied, the lease still counts" ||
    bad "define's period refusal: $out"

# 2. A role without grants cannot go around the refusal: UPDATE, DELETE and INSERT on rate_limit_config,
#    rate_limit_define, rate_limit_drop are refused (42501); the lease still counts.
cat >"$REVIEW_TMP/eve.sql" <<'SQL'
UPDATE rate_limit_config SET period = '2 hours' WHERE name = 'one';
DELETE FROM rate_limit_config WHERE name = 'one';
INSERT INTO rate_limit_config SELECT * FROM rate_limit_config;
SELECT rate_limit_define('one', rate => 1, period => '2 hours', algorithm => 'token_bucket');
SELECT rate_limit_drop('one');
SELECT allowed FROM rate_limit_acquire('acme', 'one');
SQL
out=$(q_any -c "SELECT 'held', allowed FROM rate_limit_acquire('acme', 'one', 'session')" \
    -c "\\! psql -X -q -At -v VERBOSITY=sqlstate -U lease2_eve -f $REVIEW_TMP/eve.sql 2>&1")
codes=$(grep -o 'ERROR:  [0-9A-Z]*' <<<"$out" | cut -c9- | tr '\n' ' ')
[ "$codes" = "42501 42501 42501 42501 42501 " ] && [ "$(head -n 1 <<<"$out")" = "held|t" ] &&
    [ "$(tail -n 1 <<<"$out")" = f ] &&
    [ "$(q -c "SELECT period FROM rate_limit_config WHERE name = 'one'")" = 01:00:00 ] &&
    ok "a role without grants: 42501 on the table and the functions; the lease still counts" ||
    bad "hostile role: $codes / $out"

# 3. The extension's schema renamed while a session lease is held: the lease still counts (the identity
#    is the limit's name and the key), and release through the new name frees it.
out=$(q_any -v VERBOSITY=sqlstate -c "SELECT allowed FROM rate_limit_acquire('bolt', 'one', 'session')" \
    -c "ALTER SCHEMA public RENAME TO renamed" \
    -c "\\! psql -X -q -At -c \"SELECT allowed FROM renamed.rate_limit_acquire('bolt', 'one')\"" \
    -c "SELECT renamed.rate_limit_release('bolt', 'one')" \
    -c "\\! psql -X -q -At -c \"SELECT allowed FROM renamed.rate_limit_acquire('bolt', 'one')\"" \
    -c "ALTER SCHEMA renamed RENAME TO public" | tr '\n' ' ')
[ "$out" = "t f t t " ] && ok "schema renamed: the lease still counts, release frees it" || bad "schema rename: $out"

# 4. The WARNING (25P01) comes for a transaction lease outside a transaction block (also from a DO block),
#    never for a session lease or inside BEGIN ... COMMIT.
q -c "SELECT rate_limit_define('w', rate => 5, period => '1 hour', algorithm => 'concurrency')" >/dev/null
out=$(PGOPTIONS="-c client_min_messages=warning" q_any -v VERBOSITY=sqlstate \
    -c "SELECT 'plain', allowed FROM rate_limit_acquire('k', 'w')" \
    -c "SELECT 'session', allowed FROM rate_limit_acquire('k', 'w', 'session')" \
    -c "BEGIN" -c "SELECT 'block', allowed FROM rate_limit_acquire('k', 'w')" -c "COMMIT" \
    -c "DO \$\$ BEGIN PERFORM rate_limit_acquire('k', 'w'); END \$\$" -c "SELECT 'done'" | tr '\n' ' ')
[ "$out" = "WARNING:  25P01 plain|t session|t block|t WARNING:  25P01 done " ] &&
    ok "WARNING 25P01 in autocommit only (also in a DO block)" || bad "warning: $out"

# 5. Expired session leases of several limits are given back at an acquire of another limit; the live one
#    stays (and counts); a release of a key whose only lease expired frees nothing (false).
q -c "SELECT rate_limit_define('short' || i, rate => 1, period => '1 second', algorithm => 'concurrency') FROM generate_series(1, 3) i" \
  -c "SELECT rate_limit_define('other', rate => 1, period => '1 hour', algorithm => 'concurrency')" >/dev/null
out=$(q_any -c "SELECT bool_and(allowed) FROM generate_series(1, 3) i, rate_limit_acquire('k' || i, 'short' || i, 'session')" \
    -c "SELECT allowed FROM rate_limit_acquire('live', 'one', 'session')" \
    -c "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND objsubid = 21070 AND pid = pg_backend_pid()" \
    -c "SELECT pg_sleep(1.3)" \
    -c "SELECT allowed FROM rate_limit_acquire('x', 'other', 'session')" \
    -c "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND objsubid = 21070 AND pid = pg_backend_pid()" \
    -c "SELECT rate_limit_release('k1', 'short1')" \
    -c "\\! psql -X -q -At -c \"SELECT allowed FROM rate_limit_acquire('live', 'one')\"" | tr '\n' ' ')
[ "$out" = "t t 4  t 2 f f " ] && ok "expired leases of three limits given back at another limit's acquire; the live one counts" ||
    bad "expired leases across limits: $out"

# 6. Statistics under concurrency: six sessions, 25 transaction leases each on one key of N = 2 (held 20 ms)
#    and a shadow limit of N = 1: requests = calls, allowed + denied = requests, units_consumed = the leases
#    taken; the shadow limit's passes without a slot are shadow_denied, allowed, and consume nothing.
q -c "SELECT rate_limit_define('busy', rate => 2, period => '1 hour', algorithm => 'concurrency')" \
  -c "SELECT rate_limit_define('watch', rate => 1, period => '1 hour', algorithm => 'concurrency', shadow => true)" \
  -c "SELECT rate_limit_stats_reset('busy')" -c "SELECT rate_limit_stats_reset('watch')" >/dev/null
tmp=$(mktemp -d)
for s in 1 2 3 4 5 6; do
    (for _ in $(seq 1 25); do
        echo "BEGIN; SELECT 'busy', allowed FROM rate_limit_acquire('hot', 'busy');"
        echo "SELECT 'watch', allowed::int + 2 * shadow_denied::int FROM rate_limit_acquire('hot', 'watch'); SELECT pg_sleep(0.02); COMMIT;"
    done) | q -f - >"$tmp/$s" 2>&1 &
done
wait
allowed=$(cat "$tmp"/* | grep -c '^busy|t$')
denied=$(cat "$tmp"/* | grep -c '^busy|f$')
taken=$(cat "$tmp"/* | grep -c '^watch|1$')
passed=$(cat "$tmp"/* | grep -c '^watch|3$')
rm -rf "$tmp"
busy=$(q -c "SELECT requests, allowed, denied, units_consumed FROM rate_limit_stats WHERE limit_name = 'busy'")
watch=$(q -c "SELECT requests, allowed, denied, shadow_denied, units_consumed FROM rate_limit_stats WHERE limit_name = 'watch'")
[ $((allowed + denied)) = 150 ] && [ "$allowed" -ge 2 ] && [ "$denied" -ge 1 ] && [ $((taken + passed)) = 150 ] &&
    [ "$passed" -ge 1 ] && [ "$busy" = "150|$allowed|$denied|$allowed" ] && [ "$watch" = "150|150|0|$passed|$taken" ] &&
    ok "stats under 6 sessions: busy $busy (allowed $allowed, denied $denied); shadow $watch" ||
    bad "stats: busy $busy (allowed $allowed, denied $denied); watch $watch (taken $taken, passed $passed)"

rm -rf "$REVIEW_TMP"
[ "$(crash_count)" = 0 ] || bad "the server log shows a crash"
[ $failed -eq 0 ] && holds "every lease2 attack held (6 checks)"
echo "REPRODUCED: an attack that held no longer holds"
exit 1
