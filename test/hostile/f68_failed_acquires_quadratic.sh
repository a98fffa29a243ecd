#!/usr/bin/env bash
# Finding 68 (low-medium): every session acquire that a rollback undoes leaves a marker in this backend's
# entries array (session_leases.cpp) until the end of the transaction after the one that left it, and
# every subtransaction abort (roll_back), every session acquire (session_lease_attempt, and
# free_expired_session_leases) and every release scans the whole array. A batch job that, in one
# transaction, tries each item in its own EXCEPTION block (the README's "Releasing in an error path"
# pattern) and sees many items fail leaves one marker per key: n failures cost O(n^2). Measured: 10,000
# failures 0.24 s, 40,000 3.4 s, 80,000 11.3 s (transaction-scope acquires: 0.1 s, 0.46 s); a million
# would take about half an hour of one core. The array also never shrinks: 80,000 failures leave
# TopMemoryContext 8.5 MB larger for the rest of the session (a pooled connection: for days).
# Attack: one DO block, n = 10,000 then 40,000 distinct keys, each acquired (session) in a block that
# fails; then the session's TopMemoryContext once the markers are gone (two more transactions).
# Expected: about linear (40,000 failures within 8 x the time of 10,000) and the memory given back.
# Suggested fix: keep markers per key in a hash table (identity -> count) and the leases in a list per
# nesting level (roll_back touches only the aborting level's entries), or cap the markers of a
# transaction (the oldest dropped); free or shrink the array when it empties at a transaction's end.
# Fixed: a session keeps at most MAX_MARKERS (1,000) markers, the oldest going first, and the entries'
# memory is freed when they are all gone at a transaction's end.
here=$(dirname "$0")
source "$here/lib.sh"
setup_review
trap cleanup_review EXIT
export PGOPTIONS="-c client_min_messages=error"
q -c "SELECT rate_limit_define('jobs', rate => 2, period => '1 hour', algorithm => 'concurrency')" >/dev/null || exit 2
batch() {
    echo "DO \$\$ BEGIN FOR i IN 1..$1 LOOP BEGIN PERFORM rate_limit_acquire('item' || i, 'jobs', 'session');
    RAISE division_by_zero; EXCEPTION WHEN division_by_zero THEN NULL; END; END LOOP; END \$\$;"
}
ms() { grep -o 'Time: [0-9.]*' | awk '{printf "%d", $2}'; }
t10=$( (echo '\timing on'; batch 10000) | q -f - | ms)
t40=$( (echo '\timing on'; batch 40000) | q -f - | ms)
mem=$( (echo "SELECT 'before', total_bytes FROM pg_backend_memory_contexts WHERE name = 'TopMemoryContext';"
        batch 40000; echo "SELECT 1; SELECT 1;"
        echo "SELECT 'after', total_bytes FROM pg_backend_memory_contexts WHERE name = 'TopMemoryContext';") | q -f -)
before=$(sed -n 's/^before|//p' <<<"$mem"); after=$(sed -n 's/^after|//p' <<<"$mem")
[ -n "$t10" ] && [ -n "$t40" ] && [ -n "$before" ] && [ -n "$after" ] || { echo "measurement failed: $t10 $t40 $mem"; exit 2; }
grown=$(( (after - before) / 1024 ))
echo "10,000 failed session acquires: $t10 ms; 40,000: $t40 ms; TopMemoryContext kept after 40,000: +$grown kB"
problems=()
[ "$t40" -le $((8 * t10 + 200)) ] || problems+=("40,000 failures took $t40 ms, $((t40 / (t10 > 0 ? t10 : 1)))x the $t10 ms of 10,000 (quadratic)")
[ "$grown" -le 2048 ] || problems+=("TopMemoryContext kept $grown kB after the markers went")
[ ${#problems[@]} -eq 0 ] && holds "failed session acquires cost about linear time, and their memory is given back"
reproduced "$(IFS=';'; echo "${problems[*]}")"
