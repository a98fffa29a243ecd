#!/usr/bin/env bash
# Finding 81 (medium, any caller with a long batch, at a DBA's redefinition): f78's fix carries a memory
# limit's entries over a token_bucket <-> gcra switch at commit and rewrites each entry's definition to the
# new algorithm's. A rate_limit_request_many batch already running looked its limit up once, before the
# switch, and goes on deciding its keys under the old algorithm: to it every rewritten entry was "made
# under another algorithm" (core::memory_definition) and counts as absent, so the key is full again; and
# the entry it writes back carries the old definition, which every call under the new algorithm then also
# reads as absent: full again. A key with nothing left is admitted a whole capacity twice (durable keys
# keep their balance: the batch holds their rows, and the redefinition waits for it).
# Attack: memory limit 10 a day, 'k' has used all 10; a batch of 1,000,000 requests of 'k' runs; while it
# runs, the limit is redefined with algorithm => 'gcra' (same numbers); then 'k' asks 100 more.
# Expected: 0 admitted by the batch and 0 after (the key has nothing left for a day).
source "$(dirname "$0")/lib.sh"
setup_review
q -c "SELECT rate_limit_define('switched', 10, '1 day', storage => 'memory')" \
  -c "SELECT count(*) FROM rate_limit_request_many(array_fill('k'::text, ARRAY[10]), 'switched')" >/dev/null || exit 2
batch="SELECT 'batch', count(*) FILTER (WHERE allowed) FROM rate_limit_request_many(array_fill('k'::text, ARRAY[1000000]), 'switched')"
for attempt in 1 2 3 4 5; do
    algorithm=$([ $((attempt % 2)) = 1 ] && echo gcra || echo token_bucket)
    out_file=$(mktemp)
    q -c "$batch" >"$out_file" 2>&1 &
    batch_pid=$!
    # Until the batch is deciding (its arguments built), then the switch commits while it runs.
    for _ in $(seq 1 100); do
        [ "$(q -c "SELECT count(*) FROM pg_stat_activity WHERE state = 'active' AND query LIKE 'SELECT ''batch''%' AND now() - query_start > interval '100 ms'")" = 1 ] && break
        sleep 0.02
    done
    q -c "SELECT rate_limit_define('switched', 10, '1 day', algorithm => '$algorithm', storage => 'memory')" >/dev/null || exit 2
    during=$(q -c "SELECT count(*) FROM pg_stat_activity WHERE query LIKE 'SELECT ''batch''%'")
    wait $batch_pid
    in_batch=$(sed -n 's/^batch|//p' "$out_file")
    rm -f "$out_file"
    after=$(q -c "SELECT count(*) FILTER (WHERE allowed) FROM rate_limit_request_many(array_fill('k'::text, ARRAY[100]), 'switched')")
    echo "attempt $attempt (switch to $algorithm, batch still running at its commit: $during): admitted by the batch $in_batch, after it $after"
    [ "$during" = 1 ] || continue
    [ "$in_batch" != 0 ] || [ "$after" != 0 ] &&
        reproduced "an exhausted memory key (10 a day) was admitted $in_batch by a batch running across a switch to $algorithm and $after after it"
    holds "an exhausted memory key stays exhausted across a token_bucket <-> gcra switch made during a batch"
done
echo "the switch never committed while the batch ran"
exit 2
