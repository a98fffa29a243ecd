#!/usr/bin/env bash
# Finding 20 (low, operability): the WARNING that should tell that memory keys lost their consumption
# understates it by orders of magnitude. memory_report_evictions (memory_state.cpp) sends it at the first
# eviction of a session, with the count of that first batch (1/16 of a partition), then stays silent for
# a minute; what the session evicts meanwhile is reported only if the same session evicts again a minute
# later, and never if it disconnects first. A flood that forgot tens of thousands of keys leaves one line
# in the log saying "64 keys ... were evicted" (memory_keys = 20000), so a DBA reading the log sees a
# harmless trickle. rate_limit_storage.evicted_not_full has the true figure, but only for the owner.
# Expected: the warnings a statement causes account for every key it evicted (e.g. reported at the end
# of the statement or transaction, or "at least N ... more follow").
# Needs the server started with shared_preload_libraries = 'pg_ratelimit'.
source "$(dirname "$0")/lib.sh"
setup_review review_f20_user
q -c "SELECT rate_limit_define('wide', 100, '1 day', storage => 'memory')" >/dev/null || exit 2
before=$(q -c "SELECT evicted_not_full FROM rate_limit_memory_usage()")
keys=$((2 * $(q -c "SELECT capacity FROM rate_limit_memory_usage()")))
out=$(psql -X -q -At -d "$REVIEW_DB" -U review_f20_user \
        -c "SELECT count(*) FROM rate_limit_request_many(ARRAY(SELECT 'w' || g FROM generate_series(1, $keys) g), 'wide')" 2>&1)
evicted=$(($(q -c "SELECT evicted_not_full FROM rate_limit_memory_usage()") - before))
q -c "SELECT rate_limit_drop('wide')" >/dev/null
warned=$(sed -n 's/.*the memory state table is full: \([0-9]*\) keys.*/\1/p' <<<"$out" | awk '{ s += $1 } END { print s + 0 }')
echo "$keys keys in one statement: $evicted entries evicted that were not full; the session's warnings say ${warned:-0}"
[ "$evicted" -gt 0 ] || { echo "nothing was evicted: the table is larger than expected"; exit 2; }
[ "${warned:-0}" -lt "$evicted" ] && reproduced "the warnings report ${warned:-0} forgotten keys; $evicted were forgotten"
holds "the warnings account for all $evicted forgotten keys"
