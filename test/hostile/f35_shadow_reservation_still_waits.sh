#!/usr/bin/env bash
# Finding 35 (medium-low): a limit in shadow mode still makes reserved work wait. README, Shadow mode: "A
# new limit, or a tighter one, can watch live traffic before it bites". settle.cpp turns only a denial into
# an allowed, flagged call; a reservation (reserve => true, the client's ReserveMode::scheduled) that a
# real limit would have let into debt is returned unchanged: allowed, shadow_denied false, and a
# retry_after that the README defines as "how long the caller must wait before doing the work". A caller
# that honours it (as it must for a real limit) is delayed by a limit that was meant only to watch, and
# nothing tells it that the wait comes from a shadow limit. (Later plain requests are shadow-denied and
# wait for nothing, so the same limit delays reservations only.)
# Attack: the README's own reservation example, on a shadow limit: 7 taken, then 5 reserved.
# Expected: a shadow limit never makes a caller wait: retry_after 0 for every call it decides (the debt may
# be recorded as usual, flagged so that the caller can log what the real limit would have done).
source "$(dirname "$0")/lib.sh"
setup_review

out=$(q_any <<'SQL'
SET pg_ratelimit.fake_now = '2026-03-01 10:00:00+00';
SELECT rate_limit_define('llm', rate => 1, period => '1 second', capacity => 10, shadow => true);
SELECT 'first', allowed, retry_after FROM rate_limit_request('app', 'llm', 7);
SELECT 'reserved', allowed, extract(epoch FROM retry_after), shadow_denied
  FROM rate_limit_request('app', 'llm', 5, reserve => true);
SQL
)
echo "$out"
line=$(grep '^reserved|' <<<"$out")
[ -n "$line" ] || { echo "setup failed"; exit 2; }
IFS='|' read -r _ allowed wait flagged <<<"$line"
[ "$allowed" = t ] || { echo "setup failed: the reservation was not allowed"; exit 2; }
if [ "$(awk -v w="$wait" 'BEGIN { print (w > 0) }')" = 1 ]; then
    reproduced "a shadow limit told a reservation to wait ${wait} s before doing the work (allowed, shadow_denied = $flagged)"
fi
holds "a shadow limit never makes a reservation wait"
