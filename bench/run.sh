#!/usr/bin/env bash
# The benchmark in one command:
#   bench/run.sh --quick        routine check, under 2 minutes
#   bench/run.sh                full run (about 30 minutes on 2 cores)
#   bench/run.sh --shards-and-paths
#                               the cells of hot-key shards and access paths (about 10 minutes): the default
#                               cell (sync off, uniform keys, 2 clients) with the seed, the direct and the SQL
#                               path; SERIALIZABLE at 8 clients on the hot key (limits with 1, 4 and 16
#                               shards), on uniform keys and on new keys; then the hot key through pgbench
#                               --max-tries (bench/pgbench_shards.sh). Full protocol (30 rounds of 0.5 s).
#   bench/run.sh --storage-modes
#                               the storage modes and batches (about 10 minutes): 2 clients, uniform keys, with
#                               synchronous_commit off and on, SELECT 1, rate_limit_request on a durable, an
#                               unlogged and a memory limit (also as a scalar), and Redis GCRA; then per
#                               synchronous_commit a batch cell (1 client): rate_limit_request_many of 1,000
#                               keys per call in each mode beside the single calls. Checks that fsync is on
#                               and records pg_test_fsync's figures for the data directory (fsync.txt). Full
#                               protocol.
#   bench/run.sh --stats        what statistics cost (about 2 minutes): the default cell (sync off, 2 clients,
#                               uniform keys) with SELECT 1 and rate_limit_request on a durable and a memory
#                               limit, each with pg_ratelimit.stats on and off (ext_nostats,
#                               ext_memory_nostats). Full protocol; no Redis.
#   bench/run.sh --algorithms   the algorithms' cost per call (about 2 minutes): the default cell (sync off,
#                               2 clients, uniform keys) with SELECT 1 and rate_limit_request on the token
#                               bucket ('bench') and on limits of the same generosity with algorithm => 'gcra',
#                               'fixed_window' and 'sliding_window' (ext_gcra, ext_fixed_window,
#                               ext_sliding_window), and a fixed window of calendar months in Europe/Paris
#                               (ext_calendar_month). Full protocol; no Redis.
# Installs missing Debian packages, builds and installs the extension, builds the harness (CMake),
# starts a throwaway PostgreSQL 15 and a throwaway Redis (none for --shards-and-paths and --algorithms),
# measures, stops both, and writes
# bench/results/<mode>/{report.md,results.csv,results.json,plot.png}.
#
# The server preloads the extension (shared_preload_libraries, for storage => 'memory') with
# pg_ratelimit.memory_keys at three times the key space (--keys, 100,000 by default).
# Options of this script (everything else goes to the harness: see `build-bench/bench/pg_ratelimit_bench --help`):
#   --no-install    benchmark the pg_ratelimit installed in the system's PostgreSQL 15 (no build)
#   --no-redis      do not start Redis (the GCRA reference is then missing from the report)
#   --out DIR       results directory (default bench/results/MODE: quick, full, shards-and-paths, storage-modes,
#                   stats or algorithms)
#   --keys N        key space (also sizes pg_ratelimit.memory_keys; goes to the harness too)
# Environment: PGBENCH_SHARDS_ROUNDS (5) and PGBENCH_SHARDS_SECONDS (4) for bench/pgbench_shards.sh.
# Works as root (the server then runs as the postgres user) and as a normal user (sudo for apt).
set -euo pipefail
source "$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)/scripts/common.sh"

mode=full install=1 redis=1 out='' pgbench_shards=0 keys=100000
command="bench/run.sh${*:+ $*}"
harness_args=()
while [ $# -gt 0 ]; do
    case "$1" in
        --quick) mode=quick; harness_args+=(--quick) ;;
        --shards-and-paths)
            mode=shards-and-paths pgbench_shards=1 redis=0
            # shellcheck disable=SC2054  # the commas are the harness's list syntax
            harness_args+=(--sync off --clients 2 --keys-dist uniform --systems 'select1,seed,ext,ext_sql'
                           --no-extra-cell --serializable-clients 8 --serializable-keys hot,uniform,new) ;;
        --storage-modes)
            mode=storage-modes
            # shellcheck disable=SC2054  # the commas are the harness's list syntax
            harness_args+=(--sync off,on --clients 2 --keys-dist uniform --batch-clients 1
                           --systems 'select1,ext,ext_unlogged,ext_memory,ext_memory_record,redis,many_durable,many_unlogged,many_memory'
                           --no-extra-cell --serializable-clients 0) ;;
        --stats)
            mode=stats redis=0
            # shellcheck disable=SC2054  # the commas are the harness's list syntax
            harness_args+=(--sync off --clients 2 --keys-dist uniform
                           --systems 'select1,ext,ext_nostats,ext_memory,ext_memory_nostats'
                           --no-extra-cell --serializable-clients 0) ;;
        --algorithms)
            mode=algorithms redis=0
            # shellcheck disable=SC2054  # the commas are the harness's list syntax
            harness_args+=(--sync off --clients 2 --keys-dist uniform
                           --systems 'select1,ext,ext_gcra,ext_fixed_window,ext_sliding_window,ext_calendar_month'
                           --no-extra-cell --serializable-clients 0) ;;
        --keys) keys=$2; harness_args+=("$1" "$2"); shift ;;
        --no-install) install=0 ;;
        --no-redis) redis=0 ;;
        --out) out=$2; shift ;;
        -h|--help) sed -n '2,/^set -euo/{/^set -euo/!p}' "$0"; exit 0 ;;
        *) harness_args+=("$1") ;;
    esac
    shift
done
out=${out:-$ROOT/bench/results/$mode}
started=$(date +%s)

# Beyond PACKAGES: hiredis for the harness, redis-server for the reference, gnuplot for the plot.
ensure_packages "${PACKAGES[@]}" libhiredis-dev redis-server gnuplot-nox
if [ "$install" = 1 ]; then
    build_and_install_extension
fi
log "building the benchmark harness (CMake, RelWithDebInfo)"
cmake -S "$ROOT" -B "$ROOT/build-bench" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DPG_RATELIMIT_BUILD_TESTS=OFF -DPG_RATELIMIT_BUILD_BENCH=ON >/dev/null
cmake --build "$ROOT/build-bench" --target pg_ratelimit_bench -j2 >/dev/null
BENCH=$ROOT/build-bench/bench/pg_ratelimit_bench

# A server sized for the run: checkpoints far apart so that none lands in the middle of one system's
# run more than another's by design (the harness checkpoints after loading); everything else default.
# The extension is preloaded, as storage => 'memory' needs, with room for three entries per key of the run.
start_cluster -c shared_buffers=256MB -c max_wal_size=4GB -c checkpoint_timeout=30min -c max_connections=200 \
    -c shared_preload_libraries=pg_ratelimit -c pg_ratelimit.memory_keys=$(( 3 * keys ))
if [ "$mode" = storage-modes ]; then
    # The synchronous_commit=on cells compare commits that wait for a flush: meaningless unless the
    # flush reaches the disk. Check, and record what one flush costs on the data directory's filesystem.
    [ "$(psql -XAtc 'SHOW fsync')" = on ] || die "fsync is off: the synchronous_commit=on cells would measure nothing"
    mkdir -p "$out"
    log "pg_test_fsync on the data directory's filesystem ($out/fsync.txt)"
    { echo "# $PG_BIN/pg_test_fsync -s 1 -f <cluster directory>/fsync.test; server: fsync=$(psql -XAtc 'SHOW fsync')," \
           "wal_sync_method=$(psql -XAtc 'SHOW wal_sync_method'); $(df -PT "$CLUSTER_DIR" | awk 'NR == 2 { print $1, $2 }')"
      "${RUN_AS_SERVER[@]}" "$PG_BIN/pg_test_fsync" -s 1 -f "$CLUSTER_DIR/fsync.test"; } >"$out/fsync.txt" 2>&1
fi

REDIS_DIR= REDIS_PID=
stop_redis() {
    [ -n "$REDIS_PID" ] && kill "$REDIS_PID" 2>/dev/null && wait "$REDIS_PID" 2>/dev/null || true
    [ -n "$REDIS_DIR" ] && rm -rf "$REDIS_DIR"
    REDIS_PID= REDIS_DIR=
}
on_exit stop_redis
redis_args=()
if [ "$redis" = 1 ]; then
    REDIS_DIR=$(mktemp -d "${TMPDIR:-/tmp}/pg_ratelimit_redis.XXXXXX")
    log "starting a throwaway Redis on $REDIS_DIR/redis.sock (no persistence, no TCP)"
    redis-server --port 0 --unixsocket "$REDIS_DIR/redis.sock" --unixsocketperm 700 --dir "$REDIS_DIR" \
        --save '' --appendonly no --daemonize no --logfile "$REDIS_DIR/redis.log" &
    REDIS_PID=$!
    for _ in $(seq 100); do [ -S "$REDIS_DIR/redis.sock" ] && break; sleep 0.05; done
    [ -S "$REDIS_DIR/redis.sock" ] || { cat "$REDIS_DIR/redis.log"; die "Redis did not start"; }
    redis_args=(--redis "$REDIS_DIR/redis.sock")
fi

commit=$(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo unknown)
git -C "$ROOT" diff --quiet HEAD -- extension 2>/dev/null || commit="$commit (extension/ modified in the work tree)"
log "measuring ($mode)"
"$BENCH" "${harness_args[@]}" "${redis_args[@]}" --out "$out" --source-dir "$ROOT/bench" \
    --meta "command=$command" --meta "commit=$commit"
if [ "$pgbench_shards" = 1 ]; then
    log "the SERIALIZABLE hot key through pgbench --max-tries=1000 (shards 1, 4, 16)"
    "$ROOT/bench/pgbench_shards.sh" "$out" "${PGBENCH_SHARDS_ROUNDS:-5}" "${PGBENCH_SHARDS_SECONDS:-4}"
fi

stop_redis
stop_cluster
# The panels (synchronous_commit x keys) and systems the run measured, in the order they appear.
panels=$(awk -F'\t' '!/^#/ && !seen[$1]++ { printf "%s ", $1 }' "$out/plot.tsv")
systems=$(awk -F'\t' '!/^#/ && !seen[$2]++ { printf "%s ", $2 }' "$out/plot.tsv")
maxclients=$(awk -F'\t' '!/^#/ && $3 > max { max = $3 } END { print max + 0 }' "$out/plot.tsv")
if [ -n "$panels" ]; then
    gnuplot -e "datafile='$out/plot.tsv'; outfile='$out/plot.png'; panels='$panels'; systems='$systems'; maxclients=$maxclients" \
        -e "subtitle='$mode run, $(date -u +%Y-%m-%d)'" "$ROOT/bench/plot.gp"
else
    log "no autocommit cells were measured: no plot"
fi
log "done in $(( $(date +%s) - started )) s: $out/report.md, results.csv, results.json, plot.png"
