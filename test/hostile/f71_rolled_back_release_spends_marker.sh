#!/usr/bin/env bash
# Finding 71 (medium-low): a release that takes a marker (README "Releasing in an error path") spends it at
# once, not at commit: the marker is forgotten when the release runs, and a rollback of the release's
# (sub)transaction does not bring it back, although "a release is transactional too: ... a rollback
# undoes it, so a transaction retried after a serialization failure releases once". An error path that
# runs its release in a transaction which is then retried (run_transaction after 40001, a deferred
# constraint failing at COMMIT, a savepoint or a PL/pgSQL block rolled back) releases again: the second
# release finds no marker and frees *another* lease the session holds (true): N + 1 admitted.
# Attack: N = 2. The session holds job A's session lease. Job B's acquire fails (the statement fails after
# it: the lease goes, a marker stays). The error path releases B's lease: (a) in a transaction rolled back
# (what a retried 40001 sees), then again in one that commits; (b) in a transaction whose COMMIT fails (a
# deferred constraint), then again; (c) in a savepoint rolled back, then again; (d) in a PL/pgSQL block
# whose EXCEPTION handler catches a later error, then again.
# Expected: the error path's second release takes the marker (false) and job A's lease stays (1 held).
# Suggested fix: a release that takes a marker marks it (release_level, as a lease) instead of forgetting
# it; commit() forgets it, roll_back() keeps it (release_level reset).
# Fixed: a release takes a marker at commit, as it releases a lease: a rollback gives the marker back.
here=$(dirname "$0")
source "$here/lib.sh"
setup_review
trap cleanup_review EXIT
export PGOPTIONS="-c client_min_messages=error"
q -c "SELECT rate_limit_define('jobs', rate => 2, period => '1 hour', algorithm => 'concurrency')" \
  -c "CREATE TABLE job_log (id int PRIMARY KEY, ref int REFERENCES job_log DEFERRABLE INITIALLY DEFERRED)" \
  >/dev/null || exit 2
held="SELECT 'held', count(*) FROM pg_locks WHERE objsubid = 21070 AND pid = pg_backend_pid();"
fail_b="SELECT a.allowed, 1 / (a.remaining - a.remaining) FROM rate_limit_acquire('acme', 'jobs', 'session') a;"
failures=()
check() {
    local out
    out=$(printf '%s\n%s\n%s\n%s\n' "SELECT 'A', allowed FROM rate_limit_acquire('acme', 'jobs', 'session');" \
        "$fail_b" "$2" "$held" | q_any -v VERBOSITY=sqlstate 2>&1 | tr '\n' ' ')
    grep -q "released|f held|1 $" <<<"$out" || failures+=("$1: $out")
}
check "(a) the error path's release rolled back (a 40001 retry), then committed" "BEGIN;
SELECT 'first', rate_limit_release('acme', 'jobs');
ROLLBACK;
BEGIN;
SELECT 'released', rate_limit_release('acme', 'jobs');
COMMIT;"
check "(b) the error path's transaction failing at COMMIT (deferred constraint), then retried" "BEGIN;
SELECT 'first', rate_limit_release('acme', 'jobs');
INSERT INTO job_log VALUES (1, 99);
COMMIT;
BEGIN;
SELECT 'released', rate_limit_release('acme', 'jobs');
COMMIT;"
check "(c) the release in a savepoint rolled back, then again" "BEGIN;
SAVEPOINT s;
SELECT 'first', rate_limit_release('acme', 'jobs');
ROLLBACK TO s;
SELECT 'released', rate_limit_release('acme', 'jobs');
COMMIT;"
check "(d) the release in a PL/pgSQL block whose handler catches a later error, then again" "DO \$\$
BEGIN
  BEGIN
    PERFORM rate_limit_release('acme', 'jobs');
    RAISE EXCEPTION 'log write failed';
  EXCEPTION WHEN others THEN NULL;
  END;
END \$\$;
SELECT 'released', rate_limit_release('acme', 'jobs');"
[ ${#failures[@]} -eq 0 ] && holds "a rolled-back release gives its marker back: the retried release frees nothing else (4 cases)"
printf '%s\n' "${failures[@]}"
reproduced "${#failures[@]} of 4 case(s): the rolled-back release spent the marker; the retried release freed job A's lease"
