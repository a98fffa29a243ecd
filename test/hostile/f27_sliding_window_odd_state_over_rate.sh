#!/usr/bin/env bash
# Finding 27 (low, DBA writing into rate_limit_state): a sliding-window row whose count is NaN, -Infinity
# or hugely negative admits more than the rate at once; every other algorithm stays within its capacity
# whatever the row holds (the token bucket and the fixed window deny NaN and -Infinity, GCRA reads them
# as a full key). sliding_window.cpp level() caps the balance with std::min(capacity, capacity - used),
# which returns the capacity when used is NaN, and store() then writes current + target - now_used: NaN
# for NaN (then -Infinity + Infinity = NaN for -Infinity), which the next call's refund branch turns into
# an empty window, and -1e300 + (1 + 1e300) = 0 for a huge negative count. Each such call is admitted and
# recorded as nothing: 6 or 7 units at once under a rate of 5.
# Expected: never more than the rate (5) at once, whatever the row holds (a count that is not a finite
# number >= 0 is treated as the whole rate used, as the token bucket fails closed, or refused with 55000).
source "$(dirname "$0")/lib.sh"
setup_review

out=$(q <<'SQL'
SET pg_ratelimit.fake_now = '2026-01-01 12:00:00+00';
SELECT rate_limit_define('sw', rate => 5, period => '1 day', algorithm => 'sliding_window',
                         start => '2026-01-01 00:00:00+00');
CREATE TEMP TABLE odd (value float8);
INSERT INTO odd VALUES ('NaN'), ('-Infinity'), (-1e300), (0);
CREATE FUNCTION pg_temp.burst(v float8) RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE admitted bigint;
BEGIN
    PERFORM rate_limit_reset('k', 'sw');
    PERFORM rate_limit_request('k', 'sw');
    -- The row of this window, previous window empty (ts = the window's start), the count replaced.
    UPDATE rate_limit_state SET value = v, ts = '2026-01-01 00:00:00+00' WHERE limit_name = 'sw' AND key = 'k';
    SELECT count(*) FILTER (WHERE (d).allowed) INTO admitted
      FROM (SELECT rate_limit_request('k', 'sw') AS d FROM generate_series(1, 20)) AS calls;
    RETURN admitted;
END $$;
SELECT 'burst', value, pg_temp.burst(value) FROM odd;
SQL
) || { echo "$out"; echo "setup failed"; exit 2; }
echo "$out"
grep -q '^burst|0|5$' <<<"$out" || { echo "the control (a count of 0) did not admit exactly 5"; exit 2; }
over=$(awk -F'|' '$1 == "burst" && $3 > 5 { printf "%s%s: %s", sep, $2, $3; sep = ", " }' <<<"$out")
[ -n "$over" ] && reproduced "a sliding window of 5 per day admitted more than 5 at once from rows holding ($over)"
holds "a sliding-window row with an odd count never admits more than the rate at once"
