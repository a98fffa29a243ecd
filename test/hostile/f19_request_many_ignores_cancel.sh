#!/usr/bin/env bash
# Finding 19 (low-medium): rate_limit_request_many on a memory limit cannot be cancelled: its loop over
# the keys (request_functions.cpp request_many_body) never calls CHECK_FOR_INTERRUPTS, and a memory
# decision reaches none either (LWLocks hold interrupts; no SPI, no index scan). statement_timeout,
# pg_cancel_backend and pg_terminate_backend wait until every key has been decided: any login role (PUBLIC
# has EXECUTE) runs an uncancellable statement for as long as its array lasts (~0.8 s a million keys
# here; a 1 GB array holds over 100 million one-byte keys), holding the backend and consuming every key.
# The table paths check interrupts in their scans. Also shows that the statement fails AFTER consuming:
# the timeout fires at the end, when every key has been charged. (One key repeated: a WARNING, such as
# the eviction one when the table is full, processes pending interrupts as it is sent, which would end
# the statement early by chance.)
# Expected: the statement is cancelled within a fraction of a second of statement_timeout.
# Needs the server started with shared_preload_libraries = 'pg_ratelimit'.
source "$(dirname "$0")/lib.sh"
setup_review review_f19_user
KEYS=1000000  # the most one call takes (54000 beyond, since f43)
q -c "SELECT rate_limit_define('bulk', 1e9, '36000 days', storage => 'memory')" \
  -c "CREATE TABLE batch AS SELECT ARRAY(SELECT 'k'::text FROM generate_series(1, $KEYS) g) AS keys" \
  -c "GRANT SELECT ON batch TO review_f19_user" >/dev/null || exit 2

start=$(date +%s%N)
out=$(psql -X -q -At -d "$REVIEW_DB" -U review_f19_user -c "SET statement_timeout = '100ms'" \
        -c "SELECT count(*) FROM batch, rate_limit_request_many(batch.keys, 'bulk')" 2>&1)
elapsed_ms=$((($(date +%s%N) - start) / 1000000))
consumed=$(q -c "SELECT round(1e9 - (d.remaining + d.allowed::int)) FROM rate_limit_check('k', 'bulk') AS d")
echo "statement_timeout 100ms, $KEYS keys: ${elapsed_ms} ms; $out; key k charged $consumed of its $KEYS requests"
grep -q 'statement timeout' <<<"$out" || { echo "the statement was not cancelled at all"; exit 2; }
[ "$elapsed_ms" -gt 1000 ] &&
    reproduced "statement_timeout = 100ms cancelled rate_limit_request_many only after ${elapsed_ms} ms, once every key was charged"
holds "rate_limit_request_many is cancelled promptly (${elapsed_ms} ms with statement_timeout = 100ms)"
