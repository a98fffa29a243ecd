#!/usr/bin/env bash
# Finding 45 (low, any login role): rate_limit_request_all never checks for interrupts between memory triples
# (decide_in_order: "never between memory triples, whose entries an error would leave taken"), nor while it
# refunds them: statement_timeout, cancel and pg_terminate_backend wait until every memory triple is decided
# and refunded. The arrays are bounded only by the allocation (about 7.9 million triples): 3 million triples
# on one memory key run about 2 s past a 1 s statement_timeout (f19 was the same for request_many, fixed).
# Attack: request_all of 1,000,000 triples (the most one call takes since the fix of f43) on one key of a
# memory limit of 2,000,000 (so that every triple takes a unit, since the fix of f46), with a statement_timeout 100 ms past the time the arguments alone take.
# Expected: the call is cancelled within a fraction of a second of the timeout (the memory triples taken so
# far refunded before the cancel is accepted), never seconds later.
source "$(dirname "$0")/lib.sh"
setup_review
q -c "SELECT rate_limit_define('mem45', 2000000, '1 hour', storage => 'memory')" >/dev/null || exit 2
trap 'q -c "SELECT rate_limit_drop('"'"'mem45'"'"')" >/dev/null 2>&1; cleanup_review' EXIT
n=1000000
# The time to parse and check the arguments alone (the call fails on the last element's unknown limit).
start=$(date +%s%N)
q_any -c "SELECT count(*) FROM rate_limit_request_all(array_fill('k'::text, ARRAY[$n]),
              array_fill('mem45'::text, ARRAY[$n - 1]) || 'nope'::text)" >/dev/null
checked_ms=$((($(date +%s%N) - start) / 1000000))
timeout_ms=$((checked_ms + 100))
start=$(date +%s%N)
out=$(q_any -v VERBOSITY=sqlstate -c "SET statement_timeout = $timeout_ms" \
    -c "SELECT count(*) FROM rate_limit_request_all(array_fill('k'::text, ARRAY[$n]), array_fill('mem45'::text, ARRAY[$n]))")
elapsed_ms=$((($(date +%s%N) - start) / 1000000))
left=$(q -c "SELECT (rate_limit_check('k', 'mem45')).remaining + 1")  # a check needs a unit
echo "checking the arguments: $checked_ms ms; statement_timeout $timeout_ms ms; the call ended after $elapsed_ms ms: $(tr '\n' ' ' <<<"$out"); units left: $left"
[ "$left" = 2000000 ] || reproduced "the key lost units: $left left of 2000000"
grep -q 57014 <<<"$out" || { echo "the call ended before its statement_timeout: nothing measured"; exit 2; }
[ "$elapsed_ms" -gt $((timeout_ms + 500)) ] &&
    reproduced "statement_timeout of $timeout_ms ms took effect after $elapsed_ms ms ($((elapsed_ms - timeout_ms)) ms late)"
holds "the call was cancelled within 500 ms of its statement_timeout"
