#!/usr/bin/env bash
# Finding 31 (low-medium, careless user): time_zone => '+03' (or '-05', '3', '+5') is accepted and stored
# as written, but its windows follow the POSIX reading of the string, where the sign means west of
# Greenwich: '+03' opens each day at 03:00 UTC (UTC-3), '-05' at 19:00 UTC the day before (UTC+5). The same
# string given to SET TIME ZONE means the opposite (ISO 8601: '+03' is UTC+3), and time_zones.hpp promises
# "the zone PostgreSQL knows by name (as SET TIME ZONE accepts it)". Every window of such a limit opens
# 2 x offset hours away from where its definition (and rate_limit_config) says, silently: a daily quota
# "in +03" resets at 06:00 local. pg_tzset parses any POSIX TZ string that is not a file name
# (time_zones.cpp time_zone_named), and these strings are not in pg_timezone_names.
# Expected: such a spelling refused (22023: not a name of pg_timezone_names), or read as SET TIME ZONE
# reads it: a limit with time_zone '+03' opens its days at 21:00 UTC.
source "$(dirname "$0")/lib.sh"
setup_review

wrong=()
for zone in '+03' '-05' '3' '+5'; do
    out=$(q_any <<SQL
SET timezone = 'UTC';
SELECT rate_limit_define('daily', 1, '1 day', 'fixed_window', time_zone => '$zone');
SET pg_ratelimit.fake_now = '2026-07-01 12:00:00+00';
SELECT 'opens', to_char(timestamptz '2026-07-01 12:00:00+00' + reset_after, 'HH24:MI')
  FROM rate_limit_request('k', 'daily');
SET timezone = '$zone';
SELECT 'set time zone', to_char(timestamptz '2026-07-01 12:00:00+00', 'TZH:TZM'),
       to_char((date_trunc('day', timestamptz '2026-07-01 12:00:00+00') + interval '1 day') AT TIME ZONE 'UTC', 'HH24:MI');
SQL
)
    opens=$(sed -n 's/^opens|//p' <<<"$out")
    set_tz=$(sed -n 's/^set time zone|\([^|]*\)|.*/\1/p' <<<"$out")
    expected=$(sed -n 's/^set time zone|[^|]*|//p' <<<"$out")
    if grep -q '22023\|not recognized\|not a zone name' <<<"$out"; then
        echo "time_zone '$zone': refused"
        continue
    fi
    [ -n "$opens" ] || { echo "$out"; exit 2; }
    echo "time_zone '$zone': days open at $opens UTC; SET TIME ZONE '$zone' is UTC$set_tz (local midnight at $expected UTC)"
    [ "$opens" = "$expected" ] || wrong+=("'$zone'")
done
[ ${#wrong[@]} -gt 0 ] &&
    reproduced "time_zone ${wrong[*]} accepted with the opposite sign of SET TIME ZONE: every window opens 2 x offset away from the zone written in the definition"
holds "numeric time zones are refused or read as SET TIME ZONE reads them"
