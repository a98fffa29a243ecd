#!/usr/bin/env bash
# Finding 47 (low): rate_limit_request_all and rate_limit_request_many, each a single statement, deadlock
# (40P01) on two keys of one limit. request_all locks its rows in a canonical order (limit name, then key,
# as bytes); request_many locks its keys in the order given. A request_many(['b', 'a']) and a
# request_all(['a', 'b']) cross: each holds one row and waits for the other's. The README says request_all
# is "Deadlock-free whatever order concurrent callers name the limits in"; a caller of the other batch
# function of the same limits is a concurrent caller too (one statement each, no transaction of the
# caller's making in between). A third transaction that holds 'a' for a moment makes the interleaving
# deterministic.
# Attack: T0 holds key a (BEGIN; rate_limit_request('a')); T2 request_all(['a', 'b']) queues for a; T1
# request_many(['b', 'a']) locks b and queues for a; T0 commits.
# Since pg_ratelimit.lock_wait (default 1 s) bounds a call's wait for another transaction's hold on a key's
# row (55P03 beyond it; README "Waiting for other transactions"), T1 and T2 run with lock_wait = 0 (no
# bound of its own, as before lock_wait existed): the attack needs both to queue behind T0 for as long as
# the interleaving takes to set up on a slow machine. T0 holds a until both wait (polled in
# pg_stat_activity), not for a fixed time.
# Expected: both calls succeed (request_many decides its rows in the same canonical order, returning them in
# the order given), no 40P01.
source "$(dirname "$0")/lib.sh"
setup_review
q -c "SELECT rate_limit_define('dl', 100, '1 hour')" -c "SELECT count(*) FROM rate_limit_request_many(ARRAY['a', 'b'], 'dl')" >/dev/null || exit 2
tmp=$(mktemp -d)
wait_for_waiting() { poll_until "SELECT count(*) >= $1 FROM pg_stat_activity WHERE datname = '$REVIEW_DB' AND wait_event_type = 'Lock'"; }
q_any -c "BEGIN" -c "SELECT allowed FROM rate_limit_request('a', 'dl')" -c "\! touch $tmp/held" -c "$(until_file "$tmp/go")" \
      -c "COMMIT" >"$tmp/t0" &
wait_for_file "$tmp/held" || { touch "$tmp/go"; echo "T0 did not take a"; exit 2; }
export PGOPTIONS="${PGOPTIONS:-} -c pg_ratelimit.lock_wait=0"
q_any -v VERBOSITY=sqlstate -c "SELECT allowed FROM rate_limit_request_all(ARRAY['a', 'b'], ARRAY['dl', 'dl']) WHERE position = 0" >"$tmp/t2" &
wait_for_waiting 1 || { touch "$tmp/go"; echo "request_all did not wait"; exit 2; }
q_any -v VERBOSITY=sqlstate -c "SELECT count(*) FILTER (WHERE allowed) FROM rate_limit_request_many(ARRAY['b', 'a'], 'dl')" >"$tmp/t1" &
wait_for_waiting 2 || { touch "$tmp/go"; echo "request_many did not wait"; exit 2; }
touch "$tmp/go"
wait
echo "request_all: $(cat "$tmp/t2"); request_many: $(cat "$tmp/t1")"
out="$(cat "$tmp/t1" "$tmp/t2")"
rm -rf "$tmp"
grep -q '40P01' <<<"$out" && reproduced "request_all(['a', 'b']) and request_many(['b', 'a']) on one limit deadlocked (40P01)"
grep -q '^t$' <<<"$out" && grep -q '^2$' <<<"$out" || { echo "unexpected output"; exit 2; }
holds "request_all and request_many crossing over two keys both succeed"
