#!/usr/bin/env bash
# Finding 50 (low-medium): rate_limit_release gives back the session's *oldest* session lease of the key,
# even one that has expired (counts for nothing), and leaves the live one held: after a balanced
# acquire ... release, the key's slot stays busy for up to `period` more. It takes one forgotten lease on a
# pooled connection (a worker that died between acquire and release, a pooler that does not run
# DISCARD ALL) for every later job on that connection to keep its slot after releasing it: with N = 1 and
# period 1 hour, the key is blocked for an hour after each job.
# Attack: N = 1, period 1 hour. 00:00 a job acquires a session lease and never releases (expired at 01:00).
# 01:30 the next job on the same connection acquires (allowed), works, releases (true). 01:31 another
# worker acquires.
# Expected: allowed (the job released its lease; the only other lease of the session had expired). The
# README: "it goes at rate_limit_release(key, limit) (true if this session held one: its oldest goes)" --
# the expired one is no lease any more.
here=$(dirname "$0")
source "$here/lib.sh"
setup_review
q -c "SELECT rate_limit_define('exports', rate => 1, period => '1 hour', algorithm => 'concurrency')" >/dev/null || exit 2
pooled=$(q -c "SET pg_ratelimit.fake_now = '2026-01-01 00:00:00+00'" -c "SELECT allowed FROM rate_limit_acquire('acme', 'exports', 'session')" \
    -c "SET pg_ratelimit.fake_now = '2026-01-01 01:30:00+00'" -c "SELECT allowed FROM rate_limit_acquire('acme', 'exports', 'session')" \
    -c "SELECT rate_limit_release('acme', 'exports')" \
    -c "\\! psql -X -q -At -c \"SET pg_ratelimit.fake_now = '2026-01-01 01:31:00+00'\" -c \"SELECT allowed, retry_after FROM rate_limit_acquire('acme', 'exports')\"" |
    tr '\n' ' ')
echo "forgotten lease, next job acquire, release, other worker (allowed|retry_after): $pooled"
[ "$(cut -d' ' -f1-3 <<<"$pooled")" = "t t t" ] || { echo "unexpected setup"; exit 2; }
[ "$(cut -d' ' -f4 <<<"$pooled" | cut -d'|' -f1)" = t ] && holds "a release frees the live lease, not an expired one"
reproduced "after acquire + release, the key's only slot stays held ($(cut -d' ' -f4 <<<"$pooled")): the release gave back the expired lease"
