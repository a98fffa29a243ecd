#!/usr/bin/env bash
# Finding 5 (medium): a change to rate_limit_config that does not fire triggers is never seen by the
# sessions that cached the limit: they go on deciding with the old definition for the rest of their
# life (silently admitting more than the limit). Triggers do not fire under session_replication_role =
# replica, which is how logical replication applies changes on a subscriber (rate_limit_config is a
# plain table that can be published), and how pg_restore --disable-triggers and ALTER TABLE ... DISABLE
# TRIGGER behave.
# Expected: once the limit is tightened to 1 per hour (committed), the session that cached the old
# definition denies like a new session does.
source "$(dirname "$0")/lib.sh"
setup_review
tmp=$(mktemp -d)
log=$tmp/log

q -c "SELECT rate_limit_define('api', 1000, '1 hour')" >/dev/null
# The session waits for the script between its calls (files, not sleeps: a slow machine cannot reorder them).
psql -X -q -At -d "$REVIEW_DB" >"$log" 2>&1 <<SQL &
SET pg_ratelimit.fake_now = '2026-01-01 00:00:00+00';
SELECT 'cached', allowed, remaining FROM rate_limit_request('k', 'api');
\\! touch $tmp/cached
$(until_file "$tmp/updated")
SELECT 'old session', allowed FROM rate_limit_request('k2', 'api');
SELECT 'old session', allowed FROM rate_limit_request('k2', 'api');
SELECT 'old session', allowed FROM rate_limit_request('k2', 'api');
SQL
app=$!
wait_for_file "$tmp/cached" || echo "the session did not make its first call"
q -c "SET session_replication_role = replica" -c "UPDATE rate_limit_config SET rate = 1, capacity = 1 WHERE name = 'api'"
touch "$tmp/updated"
wait "$app"
cat "$log"
q -c "SET pg_ratelimit.fake_now = '2026-01-01 00:00:00+00'" \
  -c "SELECT 'new session', allowed FROM rate_limit_request('k3', 'api')" \
  -c "SELECT 'new session', allowed FROM rate_limit_request('k3', 'api')"
admitted=$(grep -c '^old session|t$' "$log")
rm -rf "$tmp"
[ "$admitted" -gt 1 ] && reproduced "the old session admitted $admitted requests of a key under a limit of 1 (committed before them)"
holds "the old session saw the new definition"
