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
# Installs missing Debian packages, builds and installs the extension, builds the harness (CMake),
# starts a throwaway PostgreSQL 15 and a throwaway Redis, measures, stops both, and writes
# bench/results/<mode>/{report.md,results.csv,results.json,plot.png}.
#
# Options of this script (everything else goes to the harness: see `build-bench/bench/pg_ratelimit_bench --help`):
#   --no-install    benchmark the pg_ratelimit installed in the system's PostgreSQL 15 (no build)
#   --no-redis      do not start Redis (the GCRA reference is then missing from the report)
#   --out DIR       results directory (default bench/results/MODE: quick, full or shards-and-paths)
# Environment: PGBENCH_SHARDS_ROUNDS (5) and PGBENCH_SHARDS_SECONDS (4) for bench/pgbench_shards.sh.
# Works as root (the server then runs as the postgres user) and as a normal user (sudo for apt).
set -euo pipefail
source "$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)/scripts/common.sh"

mode=full install=1 redis=1 out='' pgbench_shards=0
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
        --no-install) install=0 ;;
        --no-redis) redis=0 ;;
        --out) out=$2; shift ;;
        -h|--help) sed -n '2,22p' "$0"; exit 0 ;;
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
start_cluster -c shared_buffers=256MB -c max_wal_size=4GB -c checkpoint_timeout=30min -c max_connections=200

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
if [ -n "$panels" ]; then
    gnuplot -e "datafile='$out/plot.tsv'; outfile='$out/plot.png'; panels='$panels'; systems='$systems'" \
        -e "subtitle='$mode run, $(date -u +%Y-%m-%d)'" "$ROOT/bench/plot.gp"
else
    log "no autocommit cells were measured: no plot"
fi
log "done in $(( $(date +%s) - started )) s: $out/report.md, results.csv, results.json, plot.png"
