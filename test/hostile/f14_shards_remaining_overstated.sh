#!/usr/bin/env bash
# Finding 14 (low): on a sharded limit, `remaining` is the whole units of the SUM of the shards' balances
# (core::combine_shards adds the fractional balances, decision_datum then floors the sum), not "the sum of
# the whole units of all shards" that the README promises. Four shards holding 0.9 units each report
# remaining = 3 on the very decision that denies a request of cost 1: a client that retries while
# `remaining >= cost` spins, and `remaining` no longer tells whether the next unit request can succeed.
# Expected: a denial of a cost-1 request reports remaining = 0 (each shard's whole units, summed).
source "$(dirname "$0")/lib.sh"
setup_review

out=$(q <<'SQL'
SELECT rate_limit_define('rem', rate => 4, period => '1000 days', shards => 4);
-- Empty all four shards (one unit each), then give 0.9 back to each (a refund goes to the emptiest shard).
SELECT count(*) FILTER (WHERE (d).allowed) FROM (SELECT rate_limit_request('k', 'rem') AS d FROM generate_series(1, 4)) s;
SELECT count(*) FROM (SELECT rate_limit_refund('k', 'rem', 0.9) AS d FROM generate_series(1, 4)) s;
SELECT 'shards', count(*), round(max(value)::numeric, 3) FROM rate_limit_state WHERE limit_name = 'rem';
SELECT 'check', allowed, remaining FROM rate_limit_check('k', 'rem');
SELECT 'request', allowed, remaining FROM rate_limit_request('k', 'rem');
SQL
)
echo "$out"
grep -q '^shards|4|0.900$' <<<"$out" || { echo "setup did not leave four shards at 0.9 units"; exit 2; }
if grep -qE '^request\|f\|[1-9]' <<<"$out"; then
    reproduced "a request of cost 1 is denied with remaining >= 1 (the floor of the shards' summed fractions)"
fi
grep -q '^request|f|0$' <<<"$out" || { echo "unexpected decision"; exit 2; }
holds "a denied unit request reports remaining = 0"
