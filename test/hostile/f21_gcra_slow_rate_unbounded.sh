#!/usr/bin/env bash
# Finding 21 (medium-high, careless user): a GCRA limit whose full refill takes longer than about 126,000
# years (capacity x period / rate > 4e18 microseconds) admits without bound. gcra.cpp store() clamps the
# time owed at MAX_OWED (4e18 us) and writes TAT = now + 4e18 us, but level() reads that TAT back as a debt
# of only 4e18 us x rate / period units (here 0.0013 of a unit): every request is admitted and the key
# "refills" itself at the next call. Such limits are valid (rate down to 1e-9, period up to 100 years): a
# lifetime quota ("10 free trials, never refilled", rate => 1e-6 per 36500 days) is the natural use. A
# token bucket of the same definition admits exactly 10, and the README promises that GCRA and a token
# bucket of the same rate and capacity make the same decisions, admitting at most
# capacity + rate x d / period in any stretch d.
# Expected: 10 of 50 requests admitted (as the token bucket), or the definition refused with 22023.
source "$(dirname "$0")/lib.sh"
setup_review

refused=$(q_any -v VERBOSITY=sqlstate -c "SELECT rate_limit_define('trial_gcra', rate => 1e-6, period => '36500 days', capacity => 10, algorithm => 'gcra')")
if [[ "$refused" == *22023* ]]; then
    holds "a GCRA limit whose refill the TAT cannot represent is refused (22023)"
fi
out=$(q <<'SQL'
SELECT rate_limit_define('trial_bucket', rate => 1e-6, period => '36500 days', capacity => 10);
SELECT l, count(*) FILTER (WHERE (d).allowed)
  FROM unnest(ARRAY['trial_gcra', 'trial_bucket']) AS l,
       LATERAL (SELECT rate_limit_request('account42', l) AS d FROM generate_series(1, 50)) AS calls
 GROUP BY l ORDER BY l;
SQL
) || { echo "$out"; echo "setup failed"; exit 2; }
echo "$out"
bucket=$(grep '^trial_bucket|' <<<"$out" | cut -d'|' -f2)
gcra=$(grep '^trial_gcra|' <<<"$out" | cut -d'|' -f2)
[ "$bucket" = 10 ] || { echo "the token bucket control did not admit exactly its capacity"; exit 2; }
[ "$gcra" -gt 10 ] && reproduced "a GCRA lifetime quota of 10 (rate 1e-6 per 36500 days) admitted $gcra of 50 requests (the token bucket: 10)"
holds "a GCRA limit with a very slow refill admits its capacity, as the token bucket"
