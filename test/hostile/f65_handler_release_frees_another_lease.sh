#!/usr/bin/env bash
# Finding 65 (low-medium): since f62, a session lease taken inside a PL/pgSQL block (or a savepoint) that
# fails is already given back when the block's EXCEPTION handler runs, so the cleanup such handlers do --
# rate_limit_release in the handler, as the README advised after a cancelled acquire until ad1ab4d, and as
# any code written before f62 does -- frees *another* of the session's leases (its oldest: a job still
# running) and returns true. The caller holding that other lease was told it holds it; the key admits
# N + 1. The same with a savepoint: ROLLBACK TO, then the release the client does in its error path.
# Attack: N = 2. The session holds a committed session lease (job A). A DO block takes a second one in a
# block that fails, and its handler releases "the lease it took"; a savepoint variant from psql. Then two
# other sessions try the key while job A still runs.
# Expected: the handler's release frees nothing (false: the lease it meant is gone already) and job A's
# lease stays (1 held; one other session admitted). Suggested fix: remember, per (sub)transaction, the
# identities whose leases an aborted subtransaction gave back, and let the next rate_limit_release of that
# identity in the enclosing (sub)transaction consume that record (false) before freeing a lease the
# caller still holds; at the least, warn in the README that a release in an error path after a rollback
# frees another lease, and return something that tells which lease (a slot id) so that a release can name it.
# Fixed: a session lease given back by a rollback (or an acquire that failed itself) leaves a marker,
# which the session's next release of that key takes (false) instead of another lease; a marker goes when
# a release takes it, at the next session acquire of the key, or after the limit's period (f70).
here=$(dirname "$0")
source "$here/lib.sh"
setup_review
trap cleanup_review EXIT
export PGOPTIONS="-c client_min_messages=error"
q -c "SELECT rate_limit_define('jobs', rate => 2, period => '1 hour', algorithm => 'concurrency')" >/dev/null || exit 2
job_a="SELECT 'A', allowed FROM rate_limit_acquire('acme', 'jobs', 'session');"
failures=()

check() { one_lease_left "$1" "$2" "$job_a"; }
check "EXCEPTION handler releasing the block's lease" "DO \$\$ DECLARE freed boolean; BEGIN
  BEGIN
    PERFORM rate_limit_acquire('acme', 'jobs', 'session');
    PERFORM 1 / 0;                                   -- job B fails
  EXCEPTION WHEN others THEN
    freed := rate_limit_release('acme', 'jobs');     -- give back the slot job B took
    RAISE NOTICE 'released: %', freed;
  END;
END \$\$;"
check "savepoint rolled back, then the error path's release" "BEGIN;
SAVEPOINT job_b; SELECT 'B', allowed FROM rate_limit_acquire('acme', 'jobs', 'session'); SELECT 1 / 0;
ROLLBACK TO job_b; SELECT 'released', rate_limit_release('acme', 'jobs'); COMMIT;"
check "statement failing after the acquire, then the error path's release" "SELECT a.allowed, 1 / (a.remaining - a.remaining) FROM rate_limit_acquire('acme', 'jobs', 'session') a;
SELECT 'released', rate_limit_release('acme', 'jobs');"

[ ${#failures[@]} -eq 0 ] && holds "a release after a rolled-back acquire frees nothing the caller holds (3 cases)"
printf '%s\n' "${failures[@]}"
reproduced "${#failures[@]} of 3 case(s): the error path's release freed another lease the session holds (N + 1 admitted)"
