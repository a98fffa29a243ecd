#!/usr/bin/env bash
# Finding 29 (low, superuser test clock): GCRA and the sliding window write a ts past the end of
# PostgreSQL's timestamp range, a value that timestamptz output prints but input refuses, so the state
# table no longer round-trips through COPY: pg_dump writes it, and pg_restore fails on rate_limit_state
# ("timestamp out of range"), losing every key's state in the restore. Their ts is not the clock: GCRA's is
# the theoretical arrival time (gcra.cpp store() saturates it at INT64_MAX, 'infinity', only), the sliding
# window's the window's start plus the previous count in quanta, up to a period later. Instants between
# the end of the range (294277-01-01) and INT64_MAX (294277-01-10) are written as they are. Reached with
# pg_ratelimit.fake_now late in 294276 (a test's "far future" clock): a GCRA request of 5 units of one a
# day stores ts = 294277-01-05; a sliding window of 7 days stores its previous window's 8 units as
# ts = 294277-01-04. (The real clock cannot get there: a TAT is at most about 126,000 years ahead.)
# Expected: every ts the extension writes is a valid timestamptz (saturate at the end of the range, or at
# 'infinity'): the rows copy out and back in.
source "$(dirname "$0")/lib.sh"
setup_review

out=$(q_any <<'SQL'
SELECT rate_limit_define('daily', 1, '1 day', algorithm => 'gcra', capacity => 100);
SELECT rate_limit_define('weekly', 10, '7 days', algorithm => 'sliding_window', start => '2000-01-01 00:00:00+00');
SET pg_ratelimit.fake_now = '294276-12-29 00:00:00+00';
SELECT 'request', allowed FROM rate_limit_request('k', 'weekly', 8);
SET pg_ratelimit.fake_now = '294276-12-31 00:00:00+00';
SELECT 'request', allowed FROM rate_limit_request('k', 'daily', 5);
SELECT 'request', allowed FROM rate_limit_request('k', 'weekly', 1);
RESET pg_ratelimit.fake_now;
SELECT 'stored', limit_name, ts FROM rate_limit_state ORDER BY limit_name;
SQL
)
echo "$out"
[ "$(grep -c '^request|t$' <<<"$out")" = 3 ] || { echo "setup requests failed"; exit 2; }
broken=()
for limit in daily weekly; do
    copy=$(q -c "COPY (SELECT * FROM rate_limit_state WHERE limit_name = '$limit') TO STDOUT" |
           q_any -c "CREATE TEMP TABLE copied (LIKE rate_limit_state)" -c "COPY copied FROM STDIN")
    echo "copying $limit's row back in: ${copy:-ok}"
    [[ "$copy" == *"out of range"* ]] && broken+=("$limit")
done
[ ${#broken[@]} -gt 0 ] &&
    reproduced "requests under fake_now late in 294276 stored a ts beyond the timestamp range that COPY (pg_dump/pg_restore) cannot bring back (limits: ${broken[*]})"
holds "the extension writes only valid timestamps"
