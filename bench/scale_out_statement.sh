#!/usr/bin/env bash
# Where a partition's extra work goes behind PL/Proxy (docs/scale-out.md): the server's CPU per call of
# the statement PL/Proxy sends for rate_limit_request (an unnamed statement through PQsendQueryParams,
# parsed and planned on every call: pgbench -M extended), and of the same statement prepared once
# (-M prepared), beside the plain call both ways. One throwaway PostgreSQL 15 cluster, a memory limit,
# synchronous_commit off, 4 pgbench clients, uniform keys over 100,000; CPU of every process of the
# cluster from /proc.
#   bench/scale_out_statement.sh [ROUNDS] [SECONDS]     (3, 5)
set -euo pipefail
source "$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)/scripts/common.sh"
rounds=${1:-3}
seconds=${2:-5}
ensure_packages "${PACKAGES[@]}"
build_and_install_extension >/dev/null
start_cluster -c shared_preload_libraries=pg_ratelimit -c synchronous_commit=off -c max_connections=20 >/dev/null
trap stop_cluster EXIT
psql -X -q -c "CREATE EXTENSION pg_ratelimit" \
    -c "SELECT rate_limit_define('bench_memory', 1e9, '1 second', storage => 'memory')" >/dev/null
work=$(mktemp -d "${TMPDIR:-/tmp}/pg_ratelimit_statement.XXXXXX")
# The remote statement as PL/Proxy builds it for a function returning rate_limit_decision (src/query.c).
cat >"$work/remote.sql" <<'SQL'
\set k random(1, 100000)
select allowed::bool, remaining::int8, retry_after::interval, reset_after::interval, shadow_denied::bool from public.rate_limit_request(:k::text, 'bench_memory'::text, 1::float8, false::bool);
SQL
cat >"$work/direct.sql" <<'SQL'
\set k random(1, 100000)
SELECT * FROM rate_limit_request(:k::text, 'bench_memory');
SQL
TICK=$(getconf CLK_TCK)
cpu() {
    local postmaster total fields pid
    postmaster=$(head -n 1 "$CLUSTER_DIR/data/postmaster.pid")
    read -r -a fields < <(sed 's/^.*) //' "/proc/$postmaster/stat")
    total=$((fields[11] + fields[12] + fields[13] + fields[14]))
    for pid in $(pgrep -P "$postmaster"); do
        read -r -a fields < <(sed 's/^.*) //' "/proc/$pid/stat" 2>/dev/null) || continue
        total=$((total + fields[11] + fields[12]))
    done
    echo $total
}
results=$work/results
for ((round = 1; round <= rounds; round++)); do
    for mode in prepared extended; do
        for statement in remote direct; do
            before=$(cpu)
            calls=$(pgbench -n -M "$mode" -c 4 -j 2 -T "$seconds" -f "$work/$statement.sql" 2>&1 |
                sed -n 's/^number of transactions actually processed: \([0-9]*\).*/\1/p')
            sleep 1  # the backends exit and are reaped
            after=$(cpu)
            echo "$statement $mode $calls $((after - before))" >>"$results"
        done
    done
done
python3 - "$results" "$TICK" <<'PY'
import statistics, sys
cells = {}
for line in open(sys.argv[1]):
    statement, mode, calls, ticks = line.split()
    cells.setdefault((statement, mode), []).append(int(ticks) * 1e6 / int(sys.argv[2]) / int(calls))
names = {'remote': "PL/Proxy's remote statement", 'direct': 'SELECT * FROM rate_limit_request(...)'}
print('| statement | prepared: µs CPU per call | unprepared (as PL/Proxy sends it) | unprepared ÷ prepared |')
print('|---|--:|--:|--:|')
for statement in ('remote', 'direct'):
    p, e = statistics.median(cells[(statement, 'prepared')]), statistics.median(cells[(statement, 'extended')])
    print(f'| {names[statement]} | {p:.1f} | {e:.1f} | {e / p:.2f} |')
PY
rm -rf "$work"
