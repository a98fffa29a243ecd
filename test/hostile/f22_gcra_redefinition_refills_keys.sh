#!/usr/bin/env bash
# Finding 22 (medium, the operator's own action): tightening a GCRA limit hands every exhausted key its
# allowance back. A redefinition keeps the keys' state (README: "Redefining a limit keeps the existing
# state of its keys"), but a GCRA key's state is its TAT, a time owed, which level() converts to units
# with the NEW emission interval: balance = capacity - (TAT - now) x rate / period. An abuser who emptied
# 100 per minute owes 60 s; after the operator tightens the limit to 100 per hour (one unit every 36 s),
# 60 s are worth 1.7 units, so the key holds 98 at once. A token bucket of the same definitions keeps the
# balance, 0, and refills at the new rate. (Conversely, a lower capacity or a higher rate puts GCRA keys
# into debt; a higher capacity refills them at once.) GCRA and the token bucket no longer make the same
# decisions after any redefinition of rate, period or capacity.
# Expected: after the tightening the exhausted key admits what the token bucket does (0 right away).
source "$(dirname "$0")/lib.sh"
setup_review

out=$(q <<'SQL'
SET pg_ratelimit.fake_now = '2026-01-01 00:00:00+00';
SELECT rate_limit_define('api_gcra', rate => 100, period => '1 minute', algorithm => 'gcra');
SELECT rate_limit_define('api_bucket', rate => 100, period => '1 minute');
SELECT 'before', l, count(*) FILTER (WHERE (d).allowed)
  FROM unnest(ARRAY['api_gcra', 'api_bucket']) AS l,
       LATERAL (SELECT rate_limit_request('abuser', l) AS d FROM generate_series(1, 150)) AS calls
 GROUP BY l ORDER BY l;
-- Under abuse, the operator tightens both limits to 100 per hour, keeping the burst.
SELECT rate_limit_define('api_gcra', rate => 100, period => '1 hour', algorithm => 'gcra');
SELECT rate_limit_define('api_bucket', rate => 100, period => '1 hour');
SELECT 'after', l, count(*) FILTER (WHERE (d).allowed)
  FROM unnest(ARRAY['api_gcra', 'api_bucket']) AS l,
       LATERAL (SELECT rate_limit_request('abuser', l) AS d FROM generate_series(1, 150)) AS calls
 GROUP BY l ORDER BY l;
SQL
) || { echo "$out"; echo "setup failed"; exit 2; }
echo "$out"
grep -q '^before|api_gcra|100$' <<<"$out" && grep -q '^before|api_bucket|100$' <<<"$out" ||
    { echo "setup did not exhaust both keys"; exit 2; }
grep -q '^after|api_bucket|0$' <<<"$out" || { echo "the token bucket control admitted after the tightening"; exit 2; }
gcra=$(grep '^after|api_gcra|' <<<"$out" | cut -d'|' -f3)
[ "$gcra" -gt 0 ] &&
    reproduced "tightening a GCRA limit from 100/minute to 100/hour gave an exhausted key $gcra units at once (the token bucket: 0)"
holds "a redefined GCRA limit keeps its keys' balances, as the token bucket"
