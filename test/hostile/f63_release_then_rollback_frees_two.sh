#!/usr/bin/env bash
# Finding 63 (medium-low): a transaction that takes a session lease, releases one and then rolls back
# (its COMMIT fails: a serialization failure, a deferred constraint; or any error after the release) frees
# two of the session's leases. rate_limit_release frees the session's *oldest* lease (another job's, taken
# and committed earlier), at once; the rollback then gives back the lease this transaction took (f62's
# callbacks). The earlier job keeps running without a slot: the key admits N + 1. Before f62 the rollback
# kept the new lease, so acquire + release left the count as it was; f62 made the acquire undone by a
# rollback but not the release that paired with it.
# Attack: N = 2. Session X holds a committed session lease (job A). X then runs job B in one transaction:
# acquire (session), release, and the transaction fails (ROLLBACK; a division by zero; a deferred
# constraint at COMMIT; a savepoint released then its transaction rolled back). Then two other sessions try
# to take the key's slots while job A still runs.
# Expected: job A's lease is still held after each (X holds 1), and only one other session gets a slot.
# Suggested fix: rate_limit_release frees first a lease taken by the current (sub)transaction (the
# deepest, newest: the one a rollback would give back anyway), and only then the oldest committed one.
# Fixed: rate_limit_release frees first the newest session lease of the innermost open (sub)transaction
# that took one (session_leases.cpp), then the oldest committed one.
here=$(dirname "$0")
source "$here/lib.sh"
setup_review
trap cleanup_review EXIT
export PGOPTIONS="-c client_min_messages=error"
q -c "SELECT rate_limit_define('jobs', rate => 2, period => '1 hour', algorithm => 'concurrency')" \
  -c "CREATE TABLE done (id int PRIMARY KEY, parent int REFERENCES done DEFERRABLE INITIALLY DEFERRED)" >/dev/null || exit 2
job_a="SELECT 'A', allowed FROM rate_limit_acquire('acme', 'jobs', 'session');"
acquire="SELECT 'B', allowed FROM rate_limit_acquire('acme', 'jobs', 'session');"
release="SELECT 'released', rate_limit_release('acme', 'jobs');"
failures=()

# $1 names the case, $2 is job B's SQL (after job A's committed lease). X must still hold job A's lease,
# and of two other sessions only one may get the key's other slot.
check() { one_lease_left "$1" "$2" "$job_a"; }
check "ROLLBACK after acquire + release" "BEGIN; $acquire $release ROLLBACK;"
check "an error after acquire + release" "BEGIN; $acquire $release SELECT 1 / 0; ROLLBACK;"
check "deferred constraint failing at COMMIT" "BEGIN; $acquire INSERT INTO done VALUES (1, 42); $release COMMIT;"
check "savepoint released, release, ROLLBACK" "BEGIN; SAVEPOINT s; $acquire RELEASE s; $release ROLLBACK;"
# The same transaction committed: job A's lease (or B's, they are alike) stays: 1 held, 1 other admitted.
check "control: acquire + release committed" "BEGIN; $acquire $release COMMIT;"

[ ${#failures[@]} -eq 0 ] && holds "acquire + release in a transaction that fails leaves the session's earlier lease (5 cases)"
printf '%s\n' "${failures[@]}"
reproduced "${#failures[@]} of 5 case(s): a failed transaction's acquire + release freed two leases (N + 1 admitted)"
