#!/usr/bin/env bash
# Finding 55 (low-medium): with a correct clock, two acquires of an N = 1 key are both admitted when one of
# them is delayed between its clock reading and the key's mutex (waiting for the mutex behind other
# acquires -- 34 ms each at N = 10,000 -- or simply descheduled on a loaded server) across a band boundary
# (period / 8): lease_acquire reads the clock (lease_bands) *before* it takes the mutex, so the late caller
# probes the bands of its stale reading and cannot see a session lease another caller took in the next band
# meanwhile. Same root cause as f48 (an acquire trusts its own clock reading to name every live band), but
# no clock step is needed. The probability per acquire is the stall over the band width: small for long
# periods, real for periods of seconds under load.
# Attack: N = 1, period 8 s (1-second bands). Session B calls rate_limit_acquire(session) and is held 2.5 s
# by gdb right after reading the clock (standing for a mutex wait or a preemption); meanwhile session A
# acquires (session lease) and holds it; B resumes.
# Expected: exactly one of A and B admitted. Fixed: the clock is read under the key's mutex, so B, stopped
# after its reading, holds the mutex and A waits for it (then finds the slot B took).
# Manual (outside test/hostile/run.sh's default run): needs gdb and ptrace rights on the server's backends
# (root, or kernel.yama.ptrace_scope = 0). Run: test/hostile/run.sh manual_f55_clock_read_before_mutex_race.sh
here=$(dirname "$0")
source "$here/lib.sh"
command -v gdb >/dev/null || { echo "gdb is missing: cannot run"; exit 2; }
setup_review
q -c "SELECT rate_limit_define('jobs', rate => 1, period => '8 seconds', algorithm => 'concurrency')" >/dev/null || exit 2
work=$(mktemp -d)
trap 'rm -rf "$work"; cleanup_review' EXIT
coproc B { psql -X -q -At -d "$REVIEW_DB" 2>&1; }
echo "SELECT pg_backend_pid();" >&"${B[1]}"
read -r -t 10 bpid <&"${B[0]}"
# Stop B where lease_acquire has read the clock (the first hit may be the PLT stub: finish runs into the
# function itself), keep it 2.5 s, let it go.
printf '%s\n' 'set pagination off' 'break pg_ratelimit::core::lease_bands' 'continue' 'finish' 'shell sleep 2.5' 'detach' 'quit' >"$work/gdb.cmd"
timeout 60 gdb -q -batch -x "$work/gdb.cmd" -p "$bpid" >"$work/gdb.out" 2>&1 &
gdbpid=$!
for _ in $(seq 1 100); do grep -q 'Breakpoint 1 at' "$work/gdb.out" && break; sleep 0.1; done
grep -q 'Breakpoint 1 at' "$work/gdb.out" || { cat "$work/gdb.out"; echo "gdb could not attach"; exit 2; }
sleep 0.5
echo "SELECT allowed FROM rate_limit_acquire('acme', 'jobs', 'session');" >&"${B[1]}"
for _ in $(seq 1 50); do grep -q 'lease_bands (period' "$work/gdb.out" && break; sleep 0.1; done
sleep 1.2
psql -X -q -At -d "$REVIEW_DB" -c "SELECT allowed FROM rate_limit_acquire('acme', 'jobs', 'session')" -c "SELECT pg_sleep(4)" >"$work/a.out" 2>&1 &
apid=$!
wait "$gdbpid"
read -r -t 10 b <&"${B[0]}"
wait "$apid"
a=$(head -n 1 "$work/a.out")
echo '\q' >&"${B[1]}"
grep -q 'lease_bands (period' "$work/gdb.out" || { cat "$work/gdb.out"; echo "B was never stopped after its clock reading"; exit 2; }
echo "A (acquired while B was held): $a; B (resumed): $b"
[ "$a$b" = tf ] || [ "$a$b" = ft ] && holds "an acquire delayed after its clock reading: exactly one admitted ($a $b)"
reproduced "N = 1, B held 2.5 s after its clock reading: A $a, B $b (not exactly one admitted)"
