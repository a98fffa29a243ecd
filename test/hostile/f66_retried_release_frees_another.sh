#!/usr/bin/env bash
# Finding 66 (medium): rate_limit_release frees a session lease at once, even if its transaction then
# rolls back (README, "as pg_advisory_unlock"), while run_transaction (client/include/pg_ratelimit/
# retry.hpp) runs the WHOLE body again after a 40001/40P01, and the in-transaction Limiter calls,
# limiter.release(tx, ...) among them, are meant to be called from that body. A body that releases a
# session lease (job A done) and is then retried releases twice: the second release frees *another*
# session lease the session holds (job B's, still running) and returns true. The key admits N + 1.
# Session leases only ever go back at once; the acquire is undone by a rollback (f62), the release is not,
# and no marker records a release whose transaction rolled back.
# Attack: N = 2. Session X holds two committed session leases (jobs A and B). Job A ends: its release runs
# in a transaction that fails with 40001 (a serialization failure raised after the release; or at COMMIT,
# a deferred constraint, which the client does not retry but an application may), and the body runs again:
# release, COMMIT. Then two other sessions try the key while job B still runs.
# Expected: X still holds job B's lease (1 held) and only one other session gets a slot (the retried
# release frees nothing more: false, or true without freeing a second lease).
# Suggested fix: make release transactional as acquire is: in a transaction block, record the release and
# give the lock back at commit (XACT_EVENT_COMMIT/PREPARE callback), restoring the entry on abort; or, at
# the least, on abort of a transaction that released, leave a "released" marker that the retried release
# of the key takes (true, freeing nothing); and document it in the README and in Limiter::release.
# Fixed: a release takes effect at commit (the lock is given back then) and a rollback undoes it, as an
# acquire's lease is (session_leases.cpp); outside a transaction block, at once.
here=$(dirname "$0")
source "$here/lib.sh"
setup_review
trap cleanup_review EXIT
export PGOPTIONS="-c client_min_messages=error"
q -c "SELECT rate_limit_define('jobs', rate => 2, period => '1 hour', algorithm => 'concurrency')" \
  -c "CREATE TABLE done (id int PRIMARY KEY, parent int REFERENCES done DEFERRABLE INITIALLY DEFERRED)" >/dev/null || exit 2
jobs="SELECT 'A', allowed FROM rate_limit_acquire('acme', 'jobs', 'session'); SELECT 'B', allowed FROM rate_limit_acquire('acme', 'jobs', 'session');"
release="SELECT 'released', rate_limit_release('acme', 'jobs');"
failures=()

check() { one_lease_left "$1" "$2" "$jobs"; }
check "40001 after the release, body retried" "BEGIN ISOLATION LEVEL SERIALIZABLE; $release
DO \$\$ BEGIN RAISE EXCEPTION 'could not serialize access' USING ERRCODE = 'serialization_failure'; END \$\$;
ROLLBACK;
BEGIN ISOLATION LEVEL SERIALIZABLE; $release COMMIT;"
check "deferred constraint failing at COMMIT, body retried" "BEGIN; $release INSERT INTO done VALUES (1, 42); COMMIT;
BEGIN; $release COMMIT;"
# Control: the body committed once.
check "control: release committed once" "BEGIN; $release COMMIT;"

[ ${#failures[@]} -eq 0 ] && holds "a retried transaction's release frees no second lease (3 cases)"
printf '%s\n' "${failures[@]}"
reproduced "${#failures[@]} of 3 case(s): a release retried after its transaction rolled back freed another lease (N + 1 admitted)"
