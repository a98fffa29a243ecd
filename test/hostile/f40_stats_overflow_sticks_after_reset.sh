#!/usr/bin/env bash
# Finding 40 (low-medium): a session that once counted a limit in the overflow row keeps counting it there
# for as long as it lives, whatever rate_limit_stats_reset() frees. stats.cpp remembers, per limit name, the
# entry and its generation; a freed entry's generation is bumped, so sessions look again, but the overflow
# entry's generation never changes. The WARNING's own hint ("remove the rows of limits no longer used with
# rate_limit_stats_reset()") therefore helps new sessions only: every pooled session goes on counting the
# limit in the overflow row, and the limit's own row (taken by a new session) silently misses their calls.
# Attack: pg_ratelimit.stats_limits = 10, ten limits fill the table; 'late' is counted in the overflow row;
# rate_limit_stats_reset() frees every row; the same session then requests 'late' 3 times, a new session once.
# Expected: after the reset, 'late' gets a row and all 4 calls are counted in it (overflow row: 0).
# Starts a cluster of its own (own_cluster.sh).
here=$(dirname "$0")
source "$here/lib.sh"
source "$here/own_cluster.sh"
own_cluster_start -c pg_ratelimit.stats_limits=10
export PGDATABASE=postgres
psql -X -q -v ON_ERROR_STOP=1 -c "CREATE EXTENSION pg_ratelimit" \
    -c "SELECT rate_limit_define('l' || i, 10, '1 hour') FROM generate_series(1, 10) i" \
    -c "SELECT rate_limit_define('late', 10, '1 hour')" >/dev/null || exit 2
out=$(psql -X -q -At -v ON_ERROR_STOP=1 2>&1 <<'SQL'
SELECT count(*) FROM (SELECT rate_limit_request('k', 'l' || i) FROM generate_series(1, 10) i) s;
SELECT 'full', count(*) FILTER (WHERE limit_name IS NOT NULL) FROM rate_limit_stats;
SELECT allowed FROM rate_limit_request('k', 'late');
SELECT rate_limit_stats_reset();
SELECT pg_sleep(1.2);  -- past the reuse delay of freed entries
SELECT count(*) FROM (SELECT rate_limit_request('k', 'late') FROM generate_series(1, 3)) s;
SQL
) || { echo "$out"; exit 2; }
echo "$out"
psql -X -q -At -c "SELECT allowed FROM rate_limit_request('k', 'late')" >/dev/null || exit 2
rows=$(psql -X -q -At -c "SELECT coalesce(limit_name, '<overflow>'), requests FROM rate_limit_stats ORDER BY 1")
echo "after the reset, 3 calls in the old session and 1 in a new one: $(tr '\n' ' ' <<<"$rows")"
late=$(grep '^late|' <<<"$rows" | cut -d'|' -f2)
overflow=$(grep '^<overflow>|' <<<"$rows" | cut -d'|' -f2)
[ "${late:-0}" = 4 ] && [ -z "$overflow" ] && holds "after a reset, every session counts the limit in its own row"
reproduced "after rate_limit_stats_reset(), 'late' has ${late:-no row} of 4 calls; the overflow row got ${overflow:-0} (the old session still counts there)"
