#!/usr/bin/env bash
# Finding 12 (low): "not a member of the extension" is only checked when the table's relcache entry is
# invalidated, and ALTER EXTENSION ... DROP TABLE changes pg_depend only (no relcache invalidation). A
# session that used the table before goes on using it; a new session is refused with 55000. The state
# table is not "re-derived after the table lock" for this property.
# Expected: both sessions behave alike (e.g. register a syscache callback on the extension's
# pg_depend-derived state, or re-check membership when the cached derivation is reused across
# transactions; or treat ALTER EXTENSION DROP TABLE as the DBA's explicit decision and document it).
source "$(dirname "$0")/lib.sh"
setup_review
tmp=$(mktemp -d)
log=$tmp/log

# The session waits for the script between its calls (files, not sleeps: a slow machine cannot reorder them).
psql -X -q -At -d "$REVIEW_DB" >"$log" 2>&1 <<SQL &
SELECT 'old session', allowed FROM rate_limit_request('k');
\\! touch $tmp/used
$(until_file "$tmp/dropped")
SELECT 'old session', allowed FROM rate_limit_request('k');
SQL
old=$!
wait_for_file "$tmp/used" || echo "the session did not make its first call"
q -c "ALTER EXTENSION pg_ratelimit DROP TABLE rate_limit_state"
touch "$tmp/dropped"
wait "$old"
cat "$log"
new=$(q_any -c "SELECT 'new session', allowed FROM rate_limit_request('k')")
echo "$new"
q -c "ALTER EXTENSION pg_ratelimit ADD TABLE rate_limit_state"
after=$(grep -c '^old session|t$' "$log")
rm -rf "$tmp"
if [ "$after" -eq 2 ] && grep -q 'not a member of the extension' <<<"$new"; then
    reproduced "the old session kept writing a table that is no longer the extension's; a new session is refused"
fi
holds "both sessions agree"
