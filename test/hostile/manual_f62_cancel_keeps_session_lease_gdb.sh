#!/usr/bin/env bash
# Finding 62 (low-medium; CI on 7a06957 caught it once in five runs of held_attacks_leases.sh, whose check
# 12b it was), at its exact instant: a statement cancelled (statement_timeout, pg_cancel_backend) just after
# rate_limit_acquire took a session lease kept that lease: the caller got 57014, never the decision, yet one
# more slot of the key stayed held until rate_limit_release, session end or the period. The lease is taken
# last inside the call, but the executor checks for interrupts after the function returns, before the row
# reaches the client. f62_cancel_keeps_session_lease.sh (default run) attacks the same with the cancel later
# in the statement, without gdb.
# Attack, made deterministic with gdb: session B calls rate_limit_acquire(session) and is stopped in
# stats_count (after the lease is taken, before the function returns); a pg_cancel_backend(B) arrives; B
# resumes.
# Expected: B's statement cancelled and no session lease left held (or the decision delivered and the lease
# held). Fixed: a session lease taken by a (sub)transaction that aborts is released (transaction callbacks).
# Manual (outside test/hostile/run.sh's default run): needs gdb and ptrace rights on the server's backends
# (root, or kernel.yama.ptrace_scope = 0). Run: test/hostile/run.sh manual_f62_cancel_keeps_session_lease_gdb.sh
here=$(dirname "$0")
source "$here/lib.sh"
command -v gdb >/dev/null || { echo "gdb is missing: cannot run"; exit 2; }
setup_review
q -c "SELECT rate_limit_define('jobs', rate => 2, period => '1 hour', algorithm => 'concurrency')" >/dev/null || exit 2
work=$(mktemp -d)
trap 'rm -rf "$work"; cleanup_review' EXIT
coproc B { psql -X -q -At -v VERBOSITY=sqlstate -d "$REVIEW_DB" 2>&1; }
echo "SELECT pg_backend_pid();" >&"${B[1]}"
read -r -t 10 bpid <&"${B[0]}"
printf '%s\n' 'set pagination off' 'break pg_ratelimit::stats_count' 'continue' 'shell sleep 2' 'detach' 'quit' >"$work/gdb.cmd"
timeout 60 gdb -q -batch -x "$work/gdb.cmd" -p "$bpid" >"$work/gdb.out" 2>&1 &
gdbpid=$!
for _ in $(seq 1 100); do grep -q 'Breakpoint 1 at' "$work/gdb.out" && break; sleep 0.1; done
grep -q 'Breakpoint 1 at' "$work/gdb.out" || { cat "$work/gdb.out"; echo "gdb could not attach"; exit 2; }
sleep 0.5
echo "SELECT allowed FROM rate_limit_acquire('acme', 'jobs', 'session');" >&"${B[1]}"
for _ in $(seq 1 50); do grep -q 'stats_count' "$work/gdb.out" && grep -qE 'Breakpoint 1(\.[0-9]+)?,' "$work/gdb.out" && break; sleep 0.1; done
q -c "SELECT pg_cancel_backend($bpid)" >/dev/null
wait "$gdbpid"
read -r -t 10 b <&"${B[0]}"
echo "SELECT 'held', count(*) FROM pg_locks WHERE objsubid = 21070 AND pid = pg_backend_pid();" >&"${B[1]}"
read -r -t 10 held <&"${B[0]}"
echo '\q' >&"${B[1]}"
grep -qE 'Breakpoint 1(\.[0-9]+)?,' "$work/gdb.out" || { cat "$work/gdb.out"; echo "B was never stopped in stats_count"; exit 2; }
echo "B's answer: $b; B's session leases: $held"
{ [ "$b" = t ] && [ "$held" = "held|1" ]; } || { [ "$b" != t ] && [ "$held" = "held|0" ]; } &&
    holds "the caller holds a session lease exactly when told it was allowed"
reproduced "B was answered '$b' but holds ${held#held|} session lease(s)"
