#!/usr/bin/env bash
# Where the time of one system goes, with perf (cpu-clock: no hardware counters needed):
#   bench/profile.sh [--no-install] SYSTEM [CLIENTS] [SECONDS] [harness options...]
#   e.g. bench/profile.sh --no-install ext 2 10
# Runs the harness with SYSTEM alone (uniform keys, synchronous_commit=off unless options say
# otherwise) against a throwaway cluster, records every CPU for the middle of the measured window, and
# prints the server's CPU time per call (the cluster's processes only), the client's, and the hottest
# functions of the server processes. perf.data is left in bench/results/profile-SYSTEM/.
set -euo pipefail
source "$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)/scripts/common.sh"

install=1
if [ "${1:-}" = --no-install ]; then install=0; shift; fi
system=${1:?usage: bench/profile.sh [--no-install] SYSTEM [CLIENTS] [SECONDS] [harness options...]}
clients=${2:-2}
seconds=${3:-10}
shift $(( $# < 3 ? $# : 3 ))
out=$ROOT/bench/results/profile-$system
mkdir -p "$out"

ensure_packages "${PACKAGES[@]}" libhiredis-dev linux-perf
[ "$install" = 1 ] && build_and_install_extension
cmake -S "$ROOT" -B "$ROOT/build-bench" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DPG_RATELIMIT_BUILD_TESTS=OFF -DPG_RATELIMIT_BUILD_BENCH=ON >/dev/null
cmake --build "$ROOT/build-bench" --target pg_ratelimit_bench -j2 >/dev/null
# As bench/run.sh: the extension preloaded (storage => 'memory'), room for 3 entries per key of 100,000.
start_cluster -c shared_buffers=256MB -c max_wal_size=4GB -c checkpoint_timeout=30min -c max_connections=200 \
    -c shared_preload_libraries=pg_ratelimit -c pg_ratelimit.memory_keys=300000

"$ROOT/build-bench/bench/pg_ratelimit_bench" --systems "$system" --clients "$clients" --keys-dist uniform \
    --sync off --serializable-clients 0 --no-extra-cell --settle 0 --rounds 1 --warmup 1 --seconds "$seconds" \
    --out "$out" "$@" \
    >"$out/harness.log" 2>&1 &
harness=$!
until grep -q '^measuring' "$out/harness.log"; do
    kill -0 "$harness" 2>/dev/null || { cat "$out/harness.log"; die "the harness stopped"; }
    sleep 0.2
done
# Skip the warm-up and the first second; stop a second before the window closes.
record=$(( seconds > 3 ? seconds - 2 : 1 ))
sleep 2
postmaster=$(head -1 "$CLUSTER_DIR/data/postmaster.pid")
# The cluster's processes (backends included) while they exist: other PostgreSQL servers on the machine
# are left out of the server's figures.
pids=$( (echo "$postmaster"; pgrep -P "$postmaster") | paste -sd, -)
as_root perf record -e cpu-clock -F 1000 -a -g -o "$out/perf.data" -- sleep "$record" 2>/dev/null
wait "$harness"
grep '^\[' "$out/harness.log" || true

tps=$(awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) if ($i == "tps") col = i } NR == 2 { print $col }' "$out/results.csv")
# One line per sample (1000 per second per busy CPU): count the server's, the client's and all.
as_root perf script -i "$out/perf.data" -F pid,comm 2>/dev/null | awk -v pids="$pids" -v tps="$tps" -v secs="$record" '
    BEGIN { n = split(pids, list, ","); for (i = 1; i <= n; i++) server_pid[list[i]] = 1 }
    { total++; if ($2 in server_pid) server++; else if ($1 == "pg_ratelimit_be") client++ }
    END {
        calls = tps * secs
        printf "%.0f tps; CPU per call: server %.1f us, client %.1f us; all processes kept %.2f CPUs busy\n",
               tps, server * 1000 / calls, client * 1000 / calls, total / 1000 / secs
    }'
echo "hottest functions of the cluster's processes (self time, % of the cluster's CPU time):"
as_root perf report -i "$out/perf.data" --pid "$pids" --percentage relative --no-children --sort symbol -g none \
    2>/dev/null | grep -v '^#' | grep -v '^$' | head -25 || true
echo "inclusive time of the steps of a call (children, % of the cluster's CPU time):"
as_root perf report -i "$out/perf.data" --pid "$pids" --percentage relative --children --sort symbol -g none \
    2>/dev/null \
    | grep -E 'PostgresMain|pg_ratelimit::|exec_bind_message|exec_execute_message|CommitTransactionCommand|PortalRun|PortalStart|ExecInitNode|heap_page_prune_opt|index_getnext_slot|_bt_first|heap_update|heap_insert|XLogInsert|SPI_|plpgsql_exec|ExecModifyTable|ExecScan|pq_getbyte|__send|__GI___kill' \
    | head -40 || true
