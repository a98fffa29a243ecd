#!/usr/bin/env bash
# Finding 54 (low): rate_limit_stats never counts rate_limit_acquire: a concurrency limit has no row at all,
# however many acquires it admits, denies, or (shadow mode) would have denied. Shadow mode is there to watch
# a limit before enforcing it, and rate_limit_stats' shadow_denied column is where the README sends a DBA
# for that ("requests a shadow limit let through but would have denied"); for a shadow concurrency limit
# it stays empty, and the C++ client drops the per-call flag too (f53): nothing to watch unless every
# caller logs the flag itself. Denials of an enforced concurrency limit are just as invisible.
# Attack: a shadow concurrency limit of N = 1 and an enforced one of N = 1; in one transaction, two
# acquires of each (the second would be denied, resp. is denied).
# Expected: rows for both limits (requests 2, allowed and denied / shadow_denied as decided), or the README
# saying plainly that acquires are not counted. Needs shared_preload_libraries (test/hostile/run.sh).
here=$(dirname "$0")
source "$here/lib.sh"
setup_review
[ "$(q -c "SHOW pg_ratelimit.stats")" = on ] || { echo "statistics are off"; exit 2; }
q -c "SELECT rate_limit_define('watched', rate => 1, period => '1 hour', algorithm => 'concurrency', shadow => true)" \
  -c "SELECT rate_limit_define('enforced', rate => 1, period => '1 hour', algorithm => 'concurrency')" >/dev/null || exit 2
calls=$(q -c "BEGIN" -c "SELECT allowed, shadow_denied FROM rate_limit_acquire('k', 'watched')" \
    -c "SELECT allowed, shadow_denied FROM rate_limit_acquire('k', 'watched')" \
    -c "SELECT allowed FROM rate_limit_acquire('k', 'enforced')" -c "SELECT allowed FROM rate_limit_acquire('k', 'enforced')" -c "COMMIT" |
    tr '\n' ' ')
rows=$(q -c "SELECT limit_name || ':' || requests || '/' || allowed || '/' || denied || '/' || shadow_denied FROM rate_limit_stats
             WHERE limit_name IN ('watched', 'enforced') ORDER BY 1" | tr '\n' ' ')
echo "calls: $calls; rate_limit_stats (requests/allowed/denied/shadow_denied): '${rows}'"
[ "$calls" = "t|f t|t t f " ] || { echo "unexpected decisions"; exit 2; }
[ "$rows" = "enforced:2/1/1/0 watched:2/2/0/1 " ] && holds "acquires are counted in rate_limit_stats"
reproduced "a shadow concurrency limit's would-be denial and an enforced one's denial: rate_limit_stats shows '${rows}'"
