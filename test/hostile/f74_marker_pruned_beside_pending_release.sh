#!/usr/bin/env bash
# Finding 74 (medium-low): trim_markers drops a marker "that protects no lease" as soon as it is made,
# judging by holds_lease(), which ignores a lease whose release is pending in the open transaction. A
# rollback of that release brings the lease back, but not the marker: the error path's release then frees
# the lease the session still holds (true), against the README ("one of a key the session holds no other
# lease of goes at once (it protects nothing: such a release frees nothing anyway)"): N + 1 running.
# A worker's transaction: release job A's lease (done), then job B's acquire in a savepoint (or PL/pgSQL
# block, or a shadow pass) that fails; then the whole transaction rolls back (40001, a deferred
# constraint) and the client's error path releases B's lease.
# Attack: N = 2 ('jobs') and N = 1 in shadow mode ('watch'). (a) release A; savepoint: acquire B, rolled
# back; transaction rolled back; release for B. (b) the same in nested savepoints, the release's savepoint
# rolled back. (c) shadow: release A; the same key's acquire passes without a slot (shadow pass: a
# marker); rolled back; release for the shadow pass.
# Expected: the error path's release takes the marker (false); job A's lease stays (1 held).
# Suggested fix: in trim_markers, count a lease whose release is pending (release_level > 0) as held
# (holds_lease without the release_level test), or re-run the pruning only at commit; a marker beside a
# pending-released lease then goes at commit (or stays harmlessly until its period).
# Fixed: a lease whose release is pending counts as held when markers are pruned (a rollback may undo the
# release).
here=$(dirname "$0")
source "$here/lib.sh"
setup_review
trap cleanup_review EXIT
export PGOPTIONS="-c client_min_messages=error"
q -c "SELECT rate_limit_define('jobs', rate => 2, period => '1 hour', algorithm => 'concurrency')" \
  -c "SELECT rate_limit_define('watch', rate => 1, period => '1 hour', algorithm => 'concurrency', shadow => true)" \
  >/dev/null || exit 2
held="SELECT 'held', count(*) FROM pg_locks WHERE objsubid = 21070 AND pid = pg_backend_pid();"
failures=()
check() {
    local out
    out=$(printf '%s\n' "$2" "$held" | q_any -v VERBOSITY=sqlstate 2>&1 | tr '\n' ' ')
    echo "$1: $out"
    grep -q "released|f held|1 $" <<<"$out" || failures+=("$1: $out")
}
check "(a) release A, B's acquire in a savepoint rolled back, the transaction rolled back, B's error path" "
SELECT 'A', allowed FROM rate_limit_acquire('k1', 'jobs', 'session');
BEGIN;
SELECT 'releaseA', rate_limit_release('k1', 'jobs');
SAVEPOINT s;
SELECT 'B', allowed FROM rate_limit_acquire('k1', 'jobs', 'session');
ROLLBACK TO s;
ROLLBACK;
SELECT 'released', rate_limit_release('k1', 'jobs');"
check "(b) nested savepoints: release A in one, B's acquire in another, both rolled back, B's error path" "
SELECT 'A', allowed FROM rate_limit_acquire('k2', 'jobs', 'session');
BEGIN;
SAVEPOINT a;
SELECT 'releaseA', rate_limit_release('k2', 'jobs');
SAVEPOINT b;
SELECT 'B', allowed FROM rate_limit_acquire('k2', 'jobs', 'session');
ROLLBACK TO b;
ROLLBACK TO a;
SELECT 'released', rate_limit_release('k2', 'jobs');
COMMIT;"
check "(c) shadow: release A, a shadow pass of the key (no slot), rolled back, the pass's release" "
SELECT 'A', allowed FROM rate_limit_acquire('k3', 'watch', 'session');
BEGIN;
SELECT 'releaseA', rate_limit_release('k3', 'watch');
SELECT 'pass', allowed FROM rate_limit_acquire('k3', 'watch', 'session');
ROLLBACK;
SELECT 'released', rate_limit_release('k3', 'watch');"
[ ${#failures[@]} -eq 0 ] && holds "a marker beside a lease whose release is pending survives the release's rollback (3 cases)"
reproduced "${#failures[@]} of 3 case(s): the marker was pruned beside a pending release; after its rollback the error path's release freed job A's lease"
