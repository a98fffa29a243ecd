#!/usr/bin/env bash
# Finding 23 (low-medium): redefining a sliding window's rate rescales each key's previous-window count
# by old rate / new rate, where the README promises "for a sliding window, what each key's numbers count
# is kept and judged against the new rate". The previous count lives in ts as a number of quanta of
# 1 / floor((period - 1) / capacity) units (sliding_window.cpp): the quantum depends on the rate, so the
# same ts means 100 units under 100 per minute and 10 units under 10 per minute.
#   a. Tightening 100/min -> 10/min: a key that used 100 in the previous window and 1 in this one, half
#      way through it, has used 1 + 100 x 0.5 = 51 > 10 (denied for 25.2 s); it is admitted at once
#      (previous read as 10: 1 + 10 x 0.5 = 6).
#   b. Raising 10/min -> 100/min: a key that used 10 and 1 has used 6 of 100 (93 left after one more);
#      it is charged 1 + 100 x 0.5 = 51 (48 left).
# Expected: a. denied, retry_after 25.2 s (or longer: rounding may only ever count more); b. remaining 93
# (92 with a quantum of rounding).
source "$(dirname "$0")/lib.sh"
setup_review

out=$(q <<'SQL'
SET pg_ratelimit.fake_now = '2026-01-01 00:00:30+00';
SELECT rate_limit_define('tighten', rate => 100, period => '1 minute', algorithm => 'sliding_window',
                         start => '2026-01-01 00:00:00+00');
SELECT rate_limit_define('raise', rate => 10, period => '1 minute', algorithm => 'sliding_window',
                         start => '2026-01-01 00:00:00+00');
SELECT 'full windows', (rate_limit_request('k', 'tighten', 100)).allowed, (rate_limit_request('k', 'raise', 10)).allowed;
-- Half way through the next window, one more unit each (the rows now hold the previous counts in ts).
SET pg_ratelimit.fake_now = '2026-01-01 00:01:30+00';
SELECT 'one more', (rate_limit_request('k', 'tighten')).allowed, (rate_limit_request('k', 'raise')).allowed;
-- as_is: the counts are kept and judged against the new rate (the default, proportional, scales them:
-- sql/rescale.sql).
SELECT rate_limit_define('tighten', rate => 10, period => '1 minute', algorithm => 'sliding_window',
                         start => '2026-01-01 00:00:00+00', rescale => 'as_is');
SELECT rate_limit_define('raise', rate => 100, period => '1 minute', algorithm => 'sliding_window',
                         start => '2026-01-01 00:00:00+00', rescale => 'as_is');
SELECT 'tightened', allowed, retry_after >= interval '25.2 seconds', retry_after FROM rate_limit_check('k', 'tighten');
SELECT 'raised', allowed, remaining >= 92, remaining FROM rate_limit_check('k', 'raise');
SQL
) || { echo "$out"; echo "setup failed"; exit 2; }
echo "$out"
grep -q '^full windows|t|t$' <<<"$out" && grep -q '^one more|t|t$' <<<"$out" || { echo "setup decisions differ"; exit 2; }
tightened=$(grep '^tightened|' <<<"$out")
raised=$(grep '^raised|' <<<"$out")
problems=()
[[ "$tightened" == tightened\|f\|t\|* ]] ||
    problems+=("after 100/min -> 10/min a key with 100 + 1 used is [$tightened] (expected: denied for 25.2 s or more)")
[[ "$raised" == raised\|t\|t\|* ]] ||
    problems+=("after 10/min -> 100/min a key with 10 + 1 used is [$raised] (expected: remaining 93, 92 with rounding)")
[ ${#problems[@]} -gt 0 ] && reproduced "the previous window's count is rescaled by a rate change: ${problems[*]}"
holds "a sliding window's counts are kept across a rate change and judged against the new rate"
