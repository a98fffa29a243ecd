#!/usr/bin/env bash
# Finding 46 (low, careless user): a request_all whose triples repeat one (limit, key) with costs that add up
# to more than the key's capacity can never be allowed, but it is denied like a call that could succeed later,
# with a finite retry_after (here 20 minutes): "after retry_after every denied triple could succeed" (README)
# is false for the call, and a client that honours retry_after (the library's retries, a job queue) retries
# for ever. Every function refuses a single cost above capacity with 22023 ("Such a request could never
# succeed"); require_cost_fits checks each triple alone, never the sum of one key's triples.
# Attack: capacity 3 an hour; request_all(['z', 'z'], ['lim', 'lim'], [2, 2]) on a full key, twice.
# Expected: 22023 (as for a cost above capacity: the costs of one (limit, key) add up to more than its
# capacity), checked before anything is decided; or at least no finite retry_after.
source "$(dirname "$0")/lib.sh"
setup_review
out=$(q_any -v VERBOSITY=sqlstate <<'SQL'
SELECT rate_limit_define('lim', 3, '1 hour');
SELECT 'left', (rate_limit_check('z', 'lim')).remaining + 1;
SELECT position, allowed, retry_after FROM rate_limit_request_all(ARRAY['z', 'z'], ARRAY['lim', 'lim'], ARRAY[2, 2]) WHERE position = 0;
SQL
)
echo "$out"
grep -q '^ERROR:  22023' <<<"$out" && holds "costs of one key adding up past its capacity are refused (22023)"
grep -q '^left|3$' <<<"$out" || { echo "the key is not full"; exit 2; }
row=$(grep '^0|' <<<"$out")
[ "$(cut -d'|' -f2 <<<"$row")" = f ] || { echo "unexpected: allowed"; exit 2; }
retry=$(cut -d'|' -f3 <<<"$row")
[ "$retry" != "00:00:00" ] && [ -n "$retry" ] &&
    reproduced "a full key, a call that can never succeed (2 + 2 of a capacity of 3) is denied with retry_after $retry"
holds "no finite retry_after for a call that can never succeed"
