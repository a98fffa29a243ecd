#!/usr/bin/env bash
# Finding 73 (medium-low): a session acquire of a key drops the key's markers even one that a release of
# the same open transaction has taken (release_level > 0: "a release takes a marker at commit, as it frees
# a lease (a rollback gives it back)"). If the acquire is then denied and the transaction (or savepoint)
# rolls back, the release is undone but the marker is gone: the retried error path's release finds no
# marker and frees *another* lease the session holds (true): N + 1 running.
# A worker's loop does exactly this in one transaction: release the failed job's lease, then try the next
# job's acquire (denied: the key is busy), then the transaction fails (40001) and is retried.
# Attack: N = 2. The session holds job A's session lease. Job B's acquire fails after it (its statement
# fails: the lease goes, a marker stays). Another session takes the free slot. Then, (a) in a transaction
# rolled back, (b) in a savepoint rolled back: the error path's release (takes the marker, false) and the
# next acquire of the key (denied); then the release again. (c) without the other session: the release
# and the next acquire (allowed: job C) in a transaction rolled back; then both error paths release (B's
# lease, C's): two markers are owed, one is left.
# Expected: every retried release takes a marker (false) and job A's lease stays (1 held).
# Suggested fix: session_lease_attempt drops only the markers no release has taken (release_level == 0);
# a taken one goes at commit (commit()) or is given back by roll_back().
# Fixed: an acquire drops only the markers no release of the open transaction has taken.
here=$(dirname "$0")
source "$here/lib.sh"
setup_review
# The other session (started by psql's \!) ends with its backend.
finish() {
    psql -X -q -d postgres -c "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = 'f73_holder'" >/dev/null 2>&1
    cleanup_review
}
trap finish EXIT
export PGOPTIONS="-c client_min_messages=error"
q -c "SELECT rate_limit_define('jobs', rate => 2, period => '1 hour', algorithm => 'concurrency')" >/dev/null || exit 2
held="SELECT 'held', count(*) FROM pg_locks WHERE objsubid = 21070 AND pid = pg_backend_pid();"
fail_b="SELECT a.allowed, 1 / (a.remaining - a.remaining) FROM rate_limit_acquire('acme', 'jobs', 'session') a;"
# Another session takes the slot job B's failure freed, and keeps it while the step runs.
hold_slot="\\! PGAPPNAME=f73_holder psql -X -q -At -c \"SELECT rate_limit_acquire('acme', 'jobs', 'session')\" -c 'SELECT pg_sleep(30)' >/dev/null 2>&1 &
\\! for i in \$(seq 1 50); do [ \"\$(psql -X -At -c \"SELECT count(*) FROM pg_locks l JOIN pg_stat_activity a USING (pid) WHERE a.application_name = 'f73_holder' AND l.objsubid = 21070 AND l.granted\")\" = 1 ] && break; sleep 0.1; done"
stop_holder="\\! psql -X -q -At -d postgres -c \"SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = 'f73_holder'\" >/dev/null"
failures=()
check() {
    local out
    out=$(printf '%s\n' "SELECT 'A', allowed FROM rate_limit_acquire('acme', 'jobs', 'session');" \
        "$fail_b" "$2" "$held" "$stop_holder" | q_any -v VERBOSITY=sqlstate 2>&1 | tr '\n' ' ')
    echo "$1: $out"
    grep -q "released|f held|1 $" <<<"$out" || failures+=("$1: $out")
}
check "(a) release + denied acquire in a transaction rolled back, then the release again" "$hold_slot
BEGIN;
SELECT 'first', rate_limit_release('acme', 'jobs');
SELECT 'next', allowed FROM rate_limit_acquire('acme', 'jobs', 'session');
ROLLBACK;
SELECT 'released', rate_limit_release('acme', 'jobs');"
check "(b) release + denied acquire in a savepoint rolled back, then the release again" "$hold_slot
BEGIN;
SAVEPOINT s;
SELECT 'first', rate_limit_release('acme', 'jobs');
SELECT 'next', allowed FROM rate_limit_acquire('acme', 'jobs', 'session');
ROLLBACK TO s;
SELECT 'released', rate_limit_release('acme', 'jobs');
COMMIT;"
check "(c) release + allowed acquire in a transaction rolled back: both error paths release (B's, C's)" "BEGIN;
SELECT 'first', rate_limit_release('acme', 'jobs');
SELECT 'next', allowed FROM rate_limit_acquire('acme', 'jobs', 'session');
ROLLBACK;
SELECT 'releasedB', rate_limit_release('acme', 'jobs');
SELECT 'released', rate_limit_release('acme', 'jobs');"
[ ${#failures[@]} -eq 0 ] && holds "an acquire keeps a marker a pending release took: the retried releases free nothing else (3 cases)"
reproduced "${#failures[@]} of 3 case(s): the acquire dropped the marker the pending release took; the retried release freed job A's lease"
