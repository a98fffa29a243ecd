#!/usr/bin/env bash
# Finding 62 (low-medium): a statement that failed after rate_limit_acquire took a *session* lease (a
# cancel -- statement_timeout, pg_cancel_backend -- in the instant before the row reached the client, or
# any error later in the statement) kept that lease: the caller saw an error, never the decision, yet one
# more slot of the key stayed held until rate_limit_release, session end or the period. The lock manager
# keeps session locks through a rollback. (The exact instant, with gdb: manual_f62_..._gdb.sh.)
# Attack: N = 2; session leases taken by statements that then fail: a statement_timeout and a
# pg_cancel_backend during a pg_sleep after the acquire, a division by zero after it, a transaction rolled
# back after its acquire succeeded; a savepoint rolled back, one released and then rolled back with its
# transaction, and a PL/pgSQL block that raises.
# Expected: no session lease left by any of them; a committed one (autocommit, COMMIT, RELEASE SAVEPOINT then
# COMMIT) is kept. Fixed: a session lease taken by a (sub)transaction that aborts is released.
here=$(dirname "$0")
source "$here/lib.sh"
setup_review
trap cleanup_review EXIT
q -c "SELECT rate_limit_define('jobs', rate => 2, period => '1 hour', algorithm => 'concurrency')" >/dev/null || exit 2
held="SELECT 'held', count(*) FROM pg_locks WHERE objsubid = 21070 AND pid = pg_backend_pid();"
acquire="rate_limit_acquire('acme', 'jobs', 'session')"
failures=()

# Each case runs in a session of its own; $1 names it, $2 is the SQL, $3 the leases it must leave held.
check() {
    local out
    out=$(printf '%s\n%s\n' "$2" "$held" | q_any -v VERBOSITY=sqlstate)
    grep -q "^held|$3\$" <<<"$out" || failures+=("$1: expected $3 held, got: $(tr '\n' ' ' <<<"$out")")
}
check "statement_timeout after the acquire" \
    "SET statement_timeout = '300ms'; SELECT a.allowed, pg_sleep(5) FROM $acquire a; RESET statement_timeout;" 0
check "division by zero after the acquire" "SELECT a.allowed, 1 / (a.remaining - a.remaining) FROM $acquire a;" 0
check "rolled back" "BEGIN; SELECT allowed FROM $acquire; ROLLBACK;" 0
check "savepoint rolled back" "BEGIN; SELECT allowed FROM $acquire; SAVEPOINT s; SELECT allowed FROM $acquire; ROLLBACK TO s; COMMIT;" 1
check "savepoint released, then rolled back" "BEGIN; SAVEPOINT s; SELECT allowed FROM $acquire; RELEASE s; ROLLBACK;" 0
check "savepoint released, then committed" "BEGIN; SAVEPOINT s; SELECT allowed FROM $acquire; RELEASE s; COMMIT;" 1
check "PL/pgSQL block that raises" \
    "DO \$\$ BEGIN BEGIN PERFORM $acquire; RAISE division_by_zero; EXCEPTION WHEN division_by_zero THEN NULL; END; END \$\$;" 0
check "autocommit" "SELECT allowed FROM $acquire;" 1

# A cancel from another session while B's statement sleeps after its acquire.
coproc B { psql -X -q -At -v VERBOSITY=sqlstate -d "$REVIEW_DB" 2>&1; }
echo "SELECT pg_backend_pid();" >&"${B[1]}"
read -r -t 10 bpid <&"${B[0]}"
echo "SELECT a.allowed, pg_sleep(10) FROM $acquire a;" >&"${B[1]}"
for _ in $(seq 1 100); do
    [ "$(q -c "SELECT count(*) FROM pg_locks WHERE objsubid = 21070 AND pid = $bpid")" = 1 ] && break
    sleep 0.05
done
q -c "SELECT pg_cancel_backend($bpid)" >/dev/null
read -r -t 10 b <&"${B[0]}"
echo "$held" >&"${B[1]}"
read -r -t 10 b_held <&"${B[0]}"
echo '\q' >&"${B[1]}"
[ "$b" = "ERROR:  57014" ] && [ "$b_held" = "held|0" ] || failures+=("pg_cancel_backend: B said '$b', then '$b_held'")

# Nothing else left: the sessions above have ended, and every slot is free again.
left=$(q -c "SELECT count(*) FROM pg_locks WHERE objsubid IN (21069, 21070, 21071)")
[ "$left" = 0 ] || failures+=("$left lease locks left after every session ended")

[ ${#failures[@]} -eq 0 ] && holds "no failed (sub)transaction leaves a session lease; committed ones are kept (9 cases)"
printf '%s\n' "${failures[@]}"
reproduced "${#failures[@]} case(s) left or lost a session lease"
