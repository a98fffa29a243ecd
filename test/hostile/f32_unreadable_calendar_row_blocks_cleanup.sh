#!/usr/bin/env bash
# Finding 32 (low-medium, DBA / restore): rate_limit_config accepts calendar rows that no request can read,
# and one such row makes rate_limit_cleanup() fail for every limit. The install script's CHECKs on the new
# column only say time_zone <> '' and "fixed windows only"; the rest is checked when a backend reads the row
# (time_zones.cpp set_limit_period, time_zone_named): a zone this server does not know (a dump restored on a
# server whose tzdata predates the zone, e.g. America/Ciudad_Juarez, 2022g; or a typo in a hand-written
# row), a period of a zone limit that is not whole days ('90 minutes'), months mixed with days
# ('1 mon 1 day'), negative parts ('-1 mon 40 days') or more than 100 years. The INSERT says INSERT 0 1,
# every request of that limit then raises 22023, and rate_limit_cleanup() (which reads every limit in turn)
# raises it too: the periodic job stops deleting full rows of all the other limits, and their state table
# grows without bound.
# Expected: such rows refused when written (23514 / 22023), or cleanup skipping the limit it cannot read
# (a WARNING) and cleaning the others.
source "$(dirname "$0")/lib.sh"
setup_review

accepted=()
for row in "'Mars/Olympus'|1 day" "'Europe/Paris'|90 minutes" "NULL|1 mon 1 day" "NULL|-1 mon 40 days" "NULL|101 years"; do
    zone=${row%%|*}
    period=${row#*|}
    insert=$(q_any -c "INSERT INTO rate_limit_config (name, algorithm, rate, period, capacity, time_zone)
                       VALUES ('bad', 'fixed_window', 1, '$period', 1, $zone)")
    request=$(q_any -c "SELECT 'request', allowed FROM rate_limit_request('k', 'bad')")
    q -c "DELETE FROM rate_limit_config WHERE name = 'bad'"
    echo "time_zone $zone, period '$period': INSERT: ${insert:-accepted}; request: $(head -n 1 <<<"$request")"
    [ -z "$insert" ] && accepted+=("$zone/'$period'")
done

# One such row among healthy limits: cleanup of the healthy limit's full rows.
out=$(q_any <<'SQL'
SELECT rate_limit_define('healthy', 10, '1 second');
SET pg_ratelimit.fake_now = '2026-01-01 00:00:00+00';
SELECT count(*) FROM rate_limit_request_many(ARRAY(SELECT 'key' || i FROM generate_series(1, 100) i), 'healthy');
RESET pg_ratelimit.fake_now;
INSERT INTO rate_limit_config (name, algorithm, rate, period, capacity, time_zone)
    VALUES ('restored', 'fixed_window', 1000, '1 month', 1000, 'Mars/Olympus');
SELECT 'cleanup deleted', rate_limit_cleanup();
SELECT 'healthy rows left', count(*) FROM rate_limit_state WHERE limit_name = 'healthy';
SQL
)
echo "$out"
left=$(sed -n 's/^healthy rows left|//p' <<<"$out")
[ "$left" = 100 ] || [ "$left" = 0 ] || { echo "setup failed"; exit 2; }
if [ "$left" = 100 ] || [ ${#accepted[@]} -gt 0 ]; then
    reproduced "rate_limit_config accepted ${#accepted[@]} calendar rows that every request refuses (${accepted[*]}); with one of them present, rate_limit_cleanup() failed and left the healthy limit's $left full rows"
fi
holds "unreadable calendar rows are refused, and cleanup cleans the other limits"
