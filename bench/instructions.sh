#!/usr/bin/env bash
# Server instructions per call, counted by callgrind: a measure of each system's CPU work that the noise
# of a shared machine cannot move, for judging a change to the extension before a timed run.
#   bench/instructions.sh [--no-install] [--fillfactor N] [SCRIPT[:PATH]...]
#     SCRIPT: names from bench/pgbench/ (default: all of them), e.g. ext seed update, or
#             `ext ext_gcra ext_fixed_window ext_sliding_window ext_calendar_month` for the algorithms beside
#             the token bucket, `ext ext_all1 ext_all2` for rate_limit_request_all with one and two limits,
#             `select1 ext_memory ext_memory_record` for a memory limit, `many_memory` for a 1,000-key batch on it
#     :PATH   run the script with pg_ratelimit.access_path = PATH (direct, sql or auto) on its connection,
#             e.g. `ext ext:sql seed` counts the direct path, the SQL path and the seed in one run
#     --fillfactor N   rewrite rate_limit_state with this fillfactor first (ALTER TABLE + VACUUM FULL)
#     --keep DIR       keep each script's profiles of the two counted runs, DIR/SCRIPT[-PATH].{short,long},
#                      for callgrind_annotate (--inclusive=yes; the long run did CALLS calls more)
#     --setup FILE     run this SQL file once after loading (e.g. bench/sql/overrides_*.sql: per-key tiers)
#     CALLS=5000       calls measured per script (environment)
# Loads the benchmark's data into a throwaway cluster (the harness's own preload), restarts the server
# under callgrind (synchronous_commit=off, autovacuum off), and for each script runs pgbench (prepared
# statements, one client) twice, with 1,000 and 1,000 + CALLS transactions: the difference of the two
# backends' instruction counts over CALLS is the cost of one call, net of connection start-up and cache
# warm-up. User-space instructions only: the kernel's share of a round trip (context switches, signals)
# is not counted; bench/profile.sh shows that part.
set -euo pipefail
source "$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)/scripts/common.sh"

install=1 fillfactor='' keep='' setup=''
while [ $# -gt 0 ]; do
    case "$1" in
        --no-install) install=0 ;;
        --fillfactor) fillfactor=$2; shift ;;
        --keep) keep=$(realpath -m "$2"); mkdir -p "$keep"; shift ;;
        --setup) setup=$(realpath "$2"); shift ;;
        -*) die "unknown option $1" ;;
        *) break ;;
    esac
    shift
done
calls=${CALLS:-5000}
scripts=("$@")
if [ ${#scripts[@]} -eq 0 ]; then
    for f in "$ROOT"/bench/pgbench/*.sql; do scripts+=("$(basename "$f" .sql)"); done
fi

ensure_packages "${PACKAGES[@]}" libhiredis-dev valgrind
[ "$install" = 1 ] && build_and_install_extension
cmake -S "$ROOT" -B "$ROOT/build-bench" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DPG_RATELIMIT_BUILD_TESTS=OFF >/dev/null
cmake --build "$ROOT/build-bench" --target pg_ratelimit_bench -j2 >/dev/null

# The harness preloads the keys of a limit that only some systems use (another algorithm's) when one of
# them runs: load with the systems of the scripts that call such a limit, so that they too update rows.
load_systems=select1
for arg in "${scripts[@]}"; do
    case "${arg%%:*}" in
        ext_gcra | ext_fixed_window | ext_sliding_window | ext_calendar_month) load_systems+=",${arg%%:*}" ;;
        ext_all2) load_systems+=",ext_gcra" ;;  # its second limit is ext_gcra's
        ext_memory | ext_memory_record | many_memory) load_systems+=",ext_memory" ;;
    esac
done

# Preloaded as bench/run.sh does (storage => 'memory' needs it), with the same room for memory keys; the
# memory table is saved at the clean shutdown below and loaded again under callgrind.
preload=(-c shared_preload_libraries=pg_ratelimit -c pg_ratelimit.memory_keys=300000)
start_cluster "${preload[@]}"
log "loading the benchmark's keys (the harness's preload)"
"$ROOT/build-bench/bench/pg_ratelimit_bench" --systems "$load_systems" --clients 1 --rounds 1 --warmup 0 --seconds 0.05 \
    --sync off --keys-dist uniform --serializable-clients 0 --no-extra-cell --settle 0 --out "$CLUSTER_DIR/load" \
    >"$CLUSTER_DIR/load.log" 2>&1 || { cat "$CLUSTER_DIR/load.log"; die "loading failed"; }
if [ -n "$fillfactor" ]; then
    log "rewriting rate_limit_state with fillfactor $fillfactor"
    psql -XAtq -c "ALTER TABLE rate_limit_state SET (fillfactor = $fillfactor)" -c "VACUUM FULL rate_limit_state"
fi
if [ -n "$setup" ]; then
    log "running $setup"
    psql -XAtq -v ON_ERROR_STOP=1 -f "$setup" >/dev/null
fi
"${RUN_AS_SERVER[@]}" "$PG_BIN/pg_ctl" -D "$CLUSTER_DIR/data" -m fast -w stop >/dev/null

log "restarting the server under callgrind"
cg=$CLUSTER_DIR/callgrind
"${RUN_AS_SERVER[@]}" mkdir "$cg"
"${RUN_AS_SERVER[@]}" valgrind --tool=callgrind --trace-children=yes --callgrind-out-file="$cg/cg.%p" \
    "$PG_BIN/postgres" -D "$CLUSTER_DIR/data" -c listen_addresses= -c unix_socket_directories="$CLUSTER_DIR" \
    -p 5432 -c synchronous_commit=off -c autovacuum=off "${preload[@]}" >"$CLUSTER_DIR/valgrind.log" 2>&1 &
valgrind_pid=$!
for _ in $(seq 120); do psql -XAtq -c 'SELECT 1' >/dev/null 2>&1 && break; sleep 1; done
psql -XAtq -c 'SELECT 1' >/dev/null || { cat "$CLUSTER_DIR/valgrind.log"; die "the server did not start under valgrind"; }

# Checks that requests on a connection with pg_ratelimit.access_path = PATH take that path: once a request
# has loaded the library, the setting must be the library's (an enum; an extension without it would keep
# a placeholder, a string, and count the direct path under the SQL path's name) and read PATH.
check_access_path() {
    local got
    got=$(PGOPTIONS="-c pg_ratelimit.access_path=$1" psql -XAtq -v ON_ERROR_STOP=1 \
        -c "BEGIN" -c "SELECT count(*) FROM rate_limit_request('k1', 'bench')" \
        -c "SELECT vartype || '|' || setting FROM pg_settings WHERE name = 'pg_ratelimit.access_path'" -c "ROLLBACK" \
        | sed -n 2p)
    [ "$got" = "enum|$1" ] || die "pg_ratelimit.access_path=$1: the setting reads ($got)"
}

# Runs SCRIPT for N transactions in a new backend; prints that backend's instruction count. pgbench
# opens more than one connection, and each backend writes its profile only as it exits: wait until the
# new profiles are complete and no more appear, then take the largest (the one that ran the workload).
# PGOPTIONS (the caller's) reaches the backend: the access path of SCRIPT:PATH.
backend_instructions() {
    local before new count last=-1 stable=0
    before=$(ls "$cg")
    "$PG_BIN/pgbench" -n -M prepared -c 1 -t "$2" -f "$ROOT/bench/pgbench/$1.sql" >"$cg/../pgbench.log" 2>&1 \
        || { cat "$cg/../pgbench.log" >&2; return 1; }
    for _ in $(seq 150); do
        sleep 0.2
        new=$(comm -13 <(echo "$before") <(ls "$cg"))
        count=$(echo "$new" | grep -c . || true)
        if [ "$count" -gt 0 ] && [ "$count" = "$last" ] \
            && ! for f in $new; do grep -q '^totals:' "$cg/$f" || echo incomplete; done | grep -q .; then
            stable=$((stable + 1))
            [ "$stable" -ge 8 ] && break
        else
            stable=0
        fi
        last=$count
    done
    # "count file" of the largest
    for f in $new; do grep -E '^totals:' "$cg/$f" | head -1 | awk -v f="$f" '{ print $2, f }'; done | sort -n | tail -1
}

log "instructions per call (callgrind, ${calls} calls each)"
printf '%-18s %12s\n' script instructions
for arg in "${scripts[@]}"; do
    s=${arg%%:*} path=
    [ "$s" != "$arg" ] && path=${arg#*:}
    [ -f "$ROOT/bench/pgbench/$s.sql" ] || die "no script bench/pgbench/$s.sql"
    options=
    if [ -n "$path" ]; then
        case "$path" in direct|sql|auto) ;; *) die "$arg: the access path is direct, sql or auto" ;; esac
        check_access_path "$path"
        options="-c pg_ratelimit.access_path=$path"
    fi
    # Warm-up: the key space's pages reach their steady state (updated, pruned again and again).
    PGOPTIONS=$options backend_instructions "$s" 5000 >/dev/null || die "pgbench failed on $arg"
    read -r a a_file < <(PGOPTIONS=$options backend_instructions "$s" 1000) && [ -n "$a" ] \
        || die "pgbench failed on $arg"
    read -r b b_file < <(PGOPTIONS=$options backend_instructions "$s" $(( 1000 + calls ))) && [ -n "$b" ] \
        || die "pgbench failed on $arg"
    if [ -n "$keep" ]; then
        cp "$cg/$a_file" "$keep/${arg/:/-}.short"
        cp "$cg/$b_file" "$keep/${arg/:/-}.long"
    fi
    printf '%-18s %12d\n' "$arg" $(( (b - a) / calls ))
done

# Stop the server and let valgrind write its last profiles before the cluster directory goes.
"${RUN_AS_SERVER[@]}" "$PG_BIN/pg_ctl" -D "$CLUSTER_DIR/data" -m fast -w stop >/dev/null
wait "$valgrind_pid" || true
