#!/usr/bin/env bash
# Past one machine, measured on one (docs/scale-out.md): decisions per second and the servers' CPU per
# decision for keys spread over 1, 2 and 4 partitions (scripts/cluster.sh), reached
#   through PL/Proxy's proxy   (proxy/pg_ratelimit_proxy.sql; SQL, autocommit, a prepared statement)
#   through the client's routing (Options::partitions; the C++ Limiter's pooled calls)
# beside one node reached the same two ways (SQL directly on partition 0 of the 1-partition cluster; a
# Limiter on it), for a memory and a durable limit (synchronous_commit off). Every server shares this
# machine's cores, so decisions per second say little about what separate machines would do: the CPU the
# servers spent per decision (utime + stime of every process of the postmasters involved, from /proc,
# children reaped included) is the measure, and its ratio to one node's.
#   bench/scale_out.sh [OUT_DIR] [ROUNDS] [SECONDS] [CLIENTS]   (bench/results/scale-out, 5, 4, 4)
# Writes OUT_DIR/runs.csv (one line per run) and OUT_DIR/report.md (medians, ratios, targets).
set -euo pipefail
source "$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)/scripts/common.sh"
out=${1:-$ROOT/bench/results/scale-out}
rounds=${2:-5}
seconds=${3:-4}
clients=${4:-4}
keys=100000
ensure_packages "${PACKAGES[@]}" "postgresql-$PG_MAJOR-plproxy" python3
log "building the load driver"
cmake -S "$ROOT" -B "$ROOT/build" -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build "$ROOT/build" -j2 --target pg_ratelimit_scale_out_bench >/dev/null
DRIVER=$ROOT/build/bench/pg_ratelimit_scale_out_bench
mkdir -p "$out"
runs=$out/runs.csv
echo "partitions,storage,way,round,decisions,seconds,cpu_ticks,proxy_cpu_ticks" >"$runs"
TICK=$(getconf CLK_TCK)

# The CPU ticks of the postmasters in DIRs and of all their processes, the exited ones included (reaped by
# their postmaster: its cutime and cstime).
cpu_of() {
    local total=0 dir postmaster pid fields
    for dir in "$@"; do
        postmaster=$(head -n 1 "$dir/data/postmaster.pid")
        read -r -a fields < <(sed 's/^.*) //' "/proc/$postmaster/stat")
        total=$((total + fields[11] + fields[12] + fields[13] + fields[14]))
        for pid in $(pgrep -P "$postmaster"); do
            read -r -a fields < <(sed 's/^.*) //' "/proc/$pid/stat" 2>/dev/null) || continue
            total=$((total + fields[11] + fields[12]))
        done
    done
    echo $total
}

DIR=$(mktemp -d "${TMPDIR:-/tmp}/pg_ratelimit_scale_bench.XXXXXX")
trap '"$ROOT/scripts/cluster.sh" stop "$DIR" >/dev/null 2>&1; rm -rf "$DIR"' EXIT
for n in 1 2 4; do
    log "$n partition(s)"
    "$ROOT/scripts/cluster.sh" stop "$DIR" >/dev/null 2>&1 || true
    rm -rf "$DIR" && mkdir -p "$DIR"
    CLUSTER_SERVER_OPTIONS="-c synchronous_commit=off -c max_connections=40 -c pg_ratelimit.memory_keys=300000" \
        "$ROOT/scripts/cluster.sh" start "$n" "$DIR" >"$DIR.start.log" 2>&1 || { cat "$DIR.start.log"; exit 1; }
    PG_BIN=$(sed -n 's/^PG_BIN=//p' "$DIR.start.log")
    proxy="host=$DIR/proxy port=5432 user=postgres dbname=postgres"
    parts=()
    part_dirs=()
    for ((k = 0; k < n; k++)); do
        parts+=("host=$DIR/p$k port=5432 user=postgres dbname=postgres")
        part_dirs+=("$DIR/p$k")
    done
    "$PG_BIN/psql" -X -q -d "$proxy" -c "SELECT rate_limit_define('bench_memory', 1e9, '1 second', storage => 'memory')" \
        -c "SELECT rate_limit_define('bench_durable', 1e9, '1 second')" >/dev/null
    ways=(proxy routing)
    # routing_aliases: one server reached through four pools (four conninfos of it), what the client does
    # with four partitions, without the three other servers: how much of the cost of more partitions on
    # one machine is connections that each wait more between calls.
    [ "$n" = 1 ] && ways=(node_sql node_client proxy routing routing_aliases)
    for ((round = 1; round <= rounds; round++)); do
        for storage in memory durable; do
            # A different order each round, so that the machine's drift hits every way alike.
            for ((i = 0; i < ${#ways[@]}; i++)); do
                way=${ways[$(((i + round) % ${#ways[@]}))]}
                case $way in
                    node_sql) dirs=("$DIR/p0"); command=("$DRIVER" sql "bench_$storage" "$clients" "$seconds" $keys "${parts[0]}") ;;
                    node_client) dirs=("$DIR/p0"); command=("$DRIVER" limiter "bench_$storage" "$clients" "$seconds" $keys "${parts[0]}") ;;
                    proxy) dirs=("$DIR/proxy" "${part_dirs[@]}"); command=("$DRIVER" sql "bench_$storage" "$clients" "$seconds" $keys "$proxy") ;;
                    routing) dirs=("${part_dirs[@]}"); command=("$DRIVER" limiter "bench_$storage" "$clients" "$seconds" $keys "${parts[@]}") ;;
                    routing_aliases) dirs=("$DIR/p0"); command=("$DRIVER" limiter "bench_$storage" "$clients" "$seconds" $keys
                                                                "${parts[0]}" "${parts[0]} application_name=p1"
                                                                "${parts[0]} application_name=p2" "${parts[0]} application_name=p3") ;;
                esac
                sleep 1
                before=$(cpu_of "${dirs[@]}")
                proxy_before=$(cpu_of "$DIR/proxy")
                result=$("${command[@]}")
                sleep 1.5  # the backends of the run exit and are reaped
                after=$(cpu_of "${dirs[@]}")
                proxy_used=0
                [ "$way" = proxy ] && proxy_used=$(($(cpu_of "$DIR/proxy") - proxy_before))
                read -r _ decisions _ _ _ errors _ elapsed <<<"$result"
                [ "$errors" = 0 ] || die "$way $storage: $errors errors"
                echo "$n,$storage,$way,$round,$decisions,$elapsed,$((after - before)),$proxy_used" >>"$runs"
                awk -v n="$n" -v s="$storage" -v w="$way" -v r="$round" -v d="$decisions" -v e="$elapsed" \
                    -v t=$((after - before)) -v tick="$TICK" 'BEGIN { printf "%d partition(s) %-8s %-12s round %d: %7.0f decisions/s, %6.1f us CPU per decision\n", n, s, w, r, d / e, t * 1000000 / tick / d }' >&2
            done
        done
    done
done

# Medians per cell, and ratios of CPU per decision to one node's (SQL ways to node_sql, client ways to
# node_client).
python3 - "$runs" "$TICK" "$out/report.md" "$rounds" "$seconds" "$clients" <<'PY'
import csv, statistics, sys
runs, tick, report, rounds, seconds, clients = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4], sys.argv[5], sys.argv[6]
cells = {}
for row in csv.DictReader(open(runs)):
    key = (int(row['partitions']), row['storage'], row['way'])
    d, s, t, pt = int(row['decisions']), float(row['seconds']), int(row['cpu_ticks']), int(row['proxy_cpu_ticks'])
    cells.setdefault(key, []).append((d / s, t * 1e6 / tick / d, pt * 1e6 / tick / d))
med = {k: tuple(statistics.median(v[i] for v in vals) for i in range(3)) for k, vals in cells.items()}
names = {'node_sql': 'one node, SQL', 'node_client': 'one node, client', 'proxy': 'PL/Proxy', 'routing': 'client routing',
         'routing_aliases': 'client routing, 4 pools to one server'}
base = {'node_sql': 'node_sql', 'proxy': 'node_sql', 'node_client': 'node_client', 'routing': 'node_client',
        'routing_aliases': 'node_client'}
lines = [f'Medians of {rounds} rounds of {seconds} s, {clients} clients, uniform keys over 100,000, synchronous_commit off; '
         'CPU: every process of the servers involved (proxy and partitions), per decision; of which the proxy: '
         'its own processes only.', '',
         '| partitions | storage | way | decisions/s | CPU µs per decision | of which the proxy | × one node |',
         '|---|---|---|---:|---:|---:|---:|']
for (n, storage, way) in sorted(med, key=lambda k: (k[1], k[0], list(names).index(k[2]))):
    rate, cpu, proxy_cpu = med[(n, storage, way)]
    ref = med.get((1, storage, base[way]))
    ratio = f'{cpu / ref[1]:.2f}' if ref else ''
    of_proxy = f'{proxy_cpu:.1f}' if way == 'proxy' else ''
    lines.append(f'| {n} | {storage} | {names[way]} | {rate:,.0f} | {cpu:.1f} | {of_proxy} | {ratio} |')
open(report, 'w').write('\n'.join(lines) + '\n')
print('\n'.join(lines))
PY
