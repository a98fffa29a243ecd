#!/usr/bin/env bash
# Finding 69 (low): on a shadow concurrency limit with no free slot, a session acquire lets the caller
# through (allowed true, shadow_denied true) without a lease and without a marker. Its caller was told
# "allowed", so its job's end -- or its error path, the cleanup the README's "Releasing in an error path"
# describes -- releases the key, and that release frees *another* session lease the session holds (job A's,
# still running) and returns true. The next acquire then takes a real slot, unflagged, while job A runs:
# shadow mode, whose point is to measure what the limit would deny, undercounts (shadow_denied and the
# holders query lose job A). "Release only what was acquired" speaks of a denied acquire; a shadow pass is
# reported as allowed.
# Attack: shadow limit, N = 1. The session holds job A's session lease. Job B acquires (shadow pass) and
# (a) ends normally and releases, (b) fails in its statement and the error path releases. Then job C
# acquires while job A still runs.
# Expected: the release after a shadow pass frees nothing (false); job A's lease stays (1 held); job C is
# a shadow pass again (shadow_denied true).
# Suggested fix: a session shadow pass leaves a marker (as a rolled-back lease does), taken by the next
# release of the key; or document that a shadow pass must not be released (and make Lease/the row say
# acquired = false for it, shadow_denied telling that the caller may go on).
# Fixed: a session shadow pass leaves a marker, which the caller's release takes (false).
here=$(dirname "$0")
source "$here/lib.sh"
setup_review
trap cleanup_review EXIT
export PGOPTIONS="-c client_min_messages=error"
q -c "SELECT rate_limit_define('watched', rate => 1, period => '1 hour', algorithm => 'concurrency', shadow => true)" >/dev/null || exit 2
held="SELECT 'held', count(*) FROM pg_locks WHERE objsubid = 21070 AND pid = pg_backend_pid();"
job_a="SELECT 'A', allowed, shadow_denied FROM rate_limit_acquire('acme', 'watched', 'session');"
job_c="SELECT 'C', allowed, shadow_denied FROM rate_limit_acquire('acme', 'watched', 'session');"
release="SELECT 'released', rate_limit_release('acme', 'watched');"
failures=()
check() {
    local out
    out=$(printf '%s\n%s\n%s\n%s\n' "$job_a" "$2" "$held" "$job_c" | q_any -v VERBOSITY=sqlstate 2>&1 | tr '\n' ' ')
    grep -q 'A|t|f .*released|f held|1 C|t|t' <<<"$out" ||
        failures+=("$1: $out")
}
check "job B's shadow pass, then its release" "SELECT 'B', allowed, shadow_denied FROM rate_limit_acquire('acme', 'watched', 'session'); $release"
check "job B's shadow pass fails, the error path releases" "SELECT 'B', a.allowed, 1 / (a.remaining - a.remaining) FROM rate_limit_acquire('acme', 'watched', 'session') a; $release"
[ ${#failures[@]} -eq 0 ] && holds "a release after a shadow pass frees no other lease (2 cases)"
printf '%s\n' "${failures[@]}"
reproduced "${#failures[@]} of 2 case(s): a release after a shadow pass freed job A's lease; job C got a real slot unflagged"
