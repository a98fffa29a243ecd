#!/usr/bin/env bash
# Leases against requests: pgbench throughput of an acquire + commit cycle (bench/pgbench/ext_acquire.sql,
# concurrency limits of 1, 10 and 100 slots) against rate_limit_request + commit
# (bench/pgbench/ext_request_tx.sql, a token bucket that always admits), on a throwaway cluster of its own.
#   bench/leases.sh [ROUNDS] [SECONDS] [CLIENTS]          (defaults 3, 5, 2)
# Each round runs every workload once, in a rotating order; the figures are medians over the rounds, and
# each ratio is the median of the per-round ratios (acquire tps / request tps), so that drift of a shared
# machine hits both alike. Prints a table; writes nothing else.
set -euo pipefail
source "$(dirname "$0")/../scripts/common.sh"
rounds=${1:-3}
seconds=${2:-5}
clients=${3:-2}
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

build_and_install_extension >/dev/null
# LEASES_BENCH_SERVER_OPTS: extra server options, e.g. "-c synchronous_commit=off" to take the WAL flush of
# every request's commit out of the comparison (an acquire writes no WAL).
# shellcheck disable=SC2086
start_cluster -c shared_preload_libraries=pg_ratelimit -c max_locks_per_transaction=256 ${LEASES_BENCH_SERVER_OPTS:-} >/dev/null
psql -X -q -v ON_ERROR_STOP=1 >/dev/null <<'SQL'
CREATE EXTENSION pg_ratelimit;
SELECT rate_limit_define('bench', 1e9, '1 second');
SELECT rate_limit_define('leases1', 1, '1 hour', 'concurrency');
SELECT rate_limit_define('leases10', 10, '1 hour', 'concurrency');
SELECT rate_limit_define('leases100', 100, '1 hour', 'concurrency');
SQL

workloads=(request leases1 leases10 leases100)
declare -A tps
run() {
    local workload=$1 out
    if [ "$workload" = request ]; then
        out=$(pgbench -n -M prepared -c "$clients" -j "$clients" -T "$seconds" -f "$here/pgbench/ext_request_tx.sql")
    else
        out=$(pgbench -n -M prepared -c "$clients" -j "$clients" -T "$seconds" -D lim="$workload" \
            -f "$here/pgbench/ext_acquire.sql")
    fi
    sed -n 's/^tps = \([0-9.]*\).*/\1/p' <<<"$out" | head -1
}
for round in $(seq "$rounds"); do
    for i in "${!workloads[@]}"; do
        w=${workloads[$(((i + round) % ${#workloads[@]}))]}
        tps[$w,$round]=$(run "$w")
    done
done
median() { sort -g | awk '{v[NR]=$1} END {print (NR % 2) ? v[(NR+1)/2] : (v[NR/2]+v[NR/2+1])/2}'; }
printf '%-28s %12s %20s\n' workload "median tps" "ratio to request"
for w in "${workloads[@]}"; do
    t=$(for r in $(seq "$rounds"); do echo "${tps[$w,$r]}"; done | median)
    ratio=$(for r in $(seq "$rounds"); do echo "${tps[$w,$r]} ${tps[request,$r]}" | awk '{printf "%.3f\n", $1/$2}'; done | median)
    label=$([ "$w" = request ] && echo "request + commit" || echo "acquire + commit, N=${w#leases}")
    printf '%-28s %12.0f %20s\n' "$label" "$t" "$ratio"
done
echo "($rounds rounds of ${seconds} s, $clients clients, -M prepared, 100,000 keys)"
