#!/usr/bin/env bash
# Crash recovery under load. On a cluster of its own (synchronous_commit, fsync and full_page_writes on),
# 8 clients call rate_limit_request (autocommit statements and transactions of 1-3 requests at every
# isolation level; hot, cold, exhausted and new keys) until the postmaster and its backends are killed
# with kill -9, 2-5 s into the load. After crash recovery, for EVERY key: the units consumed since the
# previous crash are at least the admissions the clients saw acknowledged and at most those plus the
# admissions in doubt (the connection broke after the statement or COMMIT was sent), and
# rate_limit_check agrees; amcheck finds the btree indexes and the heap consistent, every row is found
# through the hash index, which holds no stray entries. Three crashes in a row, the load continuing on
# the recovered data; checkpoints happen under load, and the last kill lands as a checkpoint starts.
#
#   test/crash/crash_test.sh [LOAD_DRIVER]
#
# LOAD_DRIVER defaults to build/test/crash/crash_load (the CMake build), else the script builds it.
#
# CRASH_ROUNDS (3), CRASH_CLIENTS (8) and CRASH_SEED (random, printed: the clients' choices of keys) change
# the run. Prints the figures of each crash and "cases: N", N = the (crash, key) pairs verified. Exits
# non-zero on any mismatch or inconsistency.
set -euo pipefail
# shellcheck source-path=SCRIPTDIR source=../../scripts/common.sh
source "$(dirname "$0")/../../scripts/common.sh"

DRIVER=${1:-}
ROUNDS=${CRASH_ROUNDS:-3}
CLIENTS=${CRASH_CLIENTS:-8}
SEED=${CRASH_SEED:-$(((RANDOM << 15) | RANDOM))}
HERE=$ROOT/test/crash
ensure_packages "${PACKAGES[@]}"   # amcheck and pgstattuple come with postgresql-15
if [ -z "$DRIVER" ] && [ -x "$ROOT/build/test/crash/crash_load" ]; then
    DRIVER=$ROOT/build/test/crash/crash_load
elif [ -z "$DRIVER" ]; then
    # A build directory configured before test/crash existed keeps the old list of test suites in its
    # cache: build the driver on its own, in the run directory.
    run_dir
    log "building the load driver in $RUN_DIR/crash-build"
    cmake -S "$HERE" -B "$RUN_DIR/crash-build" -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
    cmake --build "$RUN_DIR/crash-build" -j2 >/dev/null
    DRIVER=$RUN_DIR/crash-build/crash_load
fi
[ -x "$DRIVER" ] || die "no load driver at $DRIVER"

# Whatever the caller did, this process has its own private PostgreSQL: install the extension there
# (make rebuilds nothing if the extension is up to date).
# shellcheck disable=SC2119  # no extra make arguments
build_and_install_extension
# 1 MB WAL segments and max_wal_size at its minimum (two segments): under this load a spread checkpoint
# starts every megabyte or so of WAL, about every second, so crashes land while one is writing pages, and
# recovery replays full-page images of pages changed since the last one.
cluster_init crash --wal-segsize=1
# ACCESS_PATH (direct or sql, default direct): the extension's pg_ratelimit.access_path.
SERVER_OPTIONS=(-c synchronous_commit=on -c fsync=on -c full_page_writes=on -c max_wal_size=2MB
                -c min_wal_size=2MB -c log_checkpoints=on -c pg_ratelimit.access_path="${ACCESS_PATH:-direct}")
cluster_start crash "${SERVER_OPTIONS[@]}"
use_cluster crash
DATA=$(cluster_dir crash)/data
LOG=$(cluster_dir crash)/server.log
WORK=$RUN_DIR/crash-work
mkdir -p "$WORK"
: >"$WORK/baseline.tsv"

psql -X -q -v ON_ERROR_STOP=1 >/dev/null <<'SQL'
CREATE EXTENSION pg_ratelimit;
CREATE EXTENSION amcheck;
CREATE EXTENSION pgstattuple;
SELECT rate_limit_define('crash', rate => 1, period => '1000 days', capacity => 1000000);
SELECT rate_limit_define('crash_tight', rate => 1, period => '1000 days', capacity => 20);
SQL
settings=$(psql -X -At -c "SELECT string_agg(name || '=' || setting, ' ' ORDER BY name) FROM pg_settings
                           WHERE name IN ('synchronous_commit', 'fsync', 'full_page_writes')")
[ "$settings" = "fsync=on full_page_writes=on synchronous_commit=on" ] || die "unexpected settings: $settings"
echo "crash test: $ROUNDS crashes, $CLIENTS clients, seed $SEED (CRASH_SEED=$SEED replays the key choices); $settings"

# The pids of the processes of the crash cluster: the postmaster and every process it forked have the
# data directory as their working directory (which the kernel shows with symbolic links resolved).
cluster_processes() {
    find /proc -mindepth 2 -maxdepth 2 -name cwd -lname "$(readlink -f "$DATA")" 2>/dev/null | cut -d / -f 3
}

# Whether the server log shows a checkpoint started and not completed.
checkpoint_in_progress() {
    local last
    last=$(grep -E 'checkpoint (starting|complete)' "$LOG" | tail -n 1)
    [[ "$last" == *"checkpoint starting"* ]]
}

# kill -9 the postmaster and, in the same breath, every backend and auxiliary process (as a machine crash
# would: none of them gets to commit anything after the postmaster died); then any process forked
# meanwhile. Sets KILLED_OTHERS to the number of processes killed besides the postmaster.
crash_server() {
    local postmaster pids deadline=$((SECONDS + 10))
    postmaster=$(cluster_pid crash)
    pids=$(cluster_processes | grep -vx "$postmaster" || true)
    # shellcheck disable=SC2086  # one pid per word
    kill -9 "$postmaster" $pids 2>/dev/null || true
    KILLED_OTHERS=$(wc -w <<<"$pids")
    while pids=$(cluster_processes) && [ -n "$pids" ]; do
        [ "$SECONDS" -lt "$deadline" ] || die "processes of the killed cluster survive: $pids"
        # shellcheck disable=SC2086
        kill -9 $pids 2>/dev/null || true
        KILLED_OTHERS=$((KILLED_OTHERS + $(wc -w <<<"$pids")))
        sleep 0.05
    done
    # The dead postmaster stays a zombie until init reaps it (PID 1 of a container may take a second or
    # never do it), and a new postmaster refuses to start while the pid in postmaster.pid exists. A
    # stale lock file is what a real crash leaves behind: remove it if the zombie outlives 10 s.
    while [ -e "/proc/$postmaster" ]; do
        if [ "$SECONDS" -ge "$deadline" ]; then
            [ "$(awk '{print $3}' "/proc/$postmaster/stat" 2>/dev/null)" = Z ] || die "the postmaster survived kill -9"
            "${RUN_AS_SERVER[@]}" rm -f "$DATA/postmaster.pid"
            break
        fi
        sleep 0.05
    done
}

# Waits until the driver exits (it must notice the broken connections by itself) and returns its status.
wait_driver() {
    local pid=$1 deadline=$((SECONDS + 30)) status=0
    while kill -0 "$pid" 2>/dev/null; do
        if [ "$SECONDS" -ge "$deadline" ]; then
            kill -9 "$pid" 2>/dev/null || true
            echo "the load driver did not exit within 30 s of the crash" >&2
            return 1
        fi
        sleep 0.05
    done
    wait "$pid" || status=$?
    return "$status"
}

sleep_ms() { sleep "$(printf '%d.%03d' $(($1 / 1000)) $(($1 % 1000)))"; }
now_ms() { date +%s%3N; }

CASES=0
FAILED=false
for round in $(seq 1 "$ROUNDS"); do
    counts=$WORK/counts-$round.tsv
    rm -f "$WORK/ready"
    # No bound on waits for a hot key's holder (pg_ratelimit.lock_wait = 0): the test is about what survives
    # a crash, and on a loaded machine 8 clients on one key can wait past the default second (55P03).
    PGOPTIONS="${PGOPTIONS:-} -c pg_ratelimit.lock_wait=0" \
        "$DRIVER" --round "$round" --clients "$CLIENTS" --seed "$SEED" --max-seconds 60 --counts "$counts" \
        --ready "$WORK/ready" >"$WORK/driver-$round.log" 2>&1 &
    driver=$!
    until [ -f "$WORK/ready" ]; do
        kill -0 "$driver" 2>/dev/null || { cat "$WORK/driver-$round.log"; die "the load driver stopped before the crash"; }
        sleep 0.01
    done
    started=$(now_ms)
    load_ms=$((2000 + RANDOM % 3001))

    # An immediate checkpoint a second into the load: recovery then starts from a checkpoint taken under
    # load and replays the full-page images of the pages changed after it.
    sleep 1
    psql -X -q -c CHECKPOINT
    remaining=$((load_ms - ($(now_ms) - started)))
    [ "$remaining" -gt 0 ] && sleep_ms "$remaining"

    checkpoint_pid=
    if [ "$round" -eq "$ROUNDS" ]; then
        # The last crash as a checkpoint starts: request one and kill as soon as the log shows it began.
        checkpoints=$(grep -c 'checkpoint starting' "$LOG" || true)
        psql -X -q -c CHECKPOINT >/dev/null 2>&1 &
        checkpoint_pid=$!
        deadline=$((SECONDS + 10))
        until [ "$(grep -c 'checkpoint starting' "$LOG" || true)" -gt "$checkpoints" ]; do
            [ "$SECONDS" -lt "$deadline" ] || die "the requested checkpoint did not start"
            sleep 0.001
        done
    fi
    during_checkpoint=no
    checkpoint_in_progress && during_checkpoint=yes
    load_ms=$(($(now_ms) - started))
    crash_server
    [ -n "$checkpoint_pid" ] && { wait "$checkpoint_pid" || true; }

    driver_status=0
    wait_driver "$driver" || driver_status=$?
    sed 's/^/  /' "$WORK/driver-$round.log"
    [ "$driver_status" -eq 0 ] || die "the load driver failed (status $driver_status) in round $round"

    log_lines=$(wc -l <"$LOG")
    recovery_started=$(now_ms)
    cluster_start crash "${SERVER_OPTIONS[@]}"
    recovery_ms=$(($(now_ms) - recovery_started))
    recovery=$(tail -n "+$((log_lines + 1))" "$LOG")
    grep -q 'automatic recovery in progress' <<<"$recovery" || die "the server restarted without crash recovery"
    redo=$(grep -o 'redo done at [^ ]*' <<<"$recovery" | head -n 1 || true)
    redo_start=$(grep -o 'redo starts at [^ ]*' <<<"$recovery" | head -n 1 || true)
    echo "crash $round: killed after ${load_ms} ms of load (during a checkpoint: $during_checkpoint;" \
        "$KILLED_OTHERS other server processes killed with it); restart with crash recovery in ${recovery_ms} ms" \
        "(${redo_start:-no redo}, ${redo:-})"

    {
        cat <<'SQL'
CREATE TEMP TABLE crash_acks (limit_name text COLLATE "C", key text COLLATE "C", acknowledged bigint, in_doubt bigint);
CREATE TEMP TABLE crash_baseline (limit_name text COLLATE "C", key text COLLATE "C", consumed bigint);
SQL
        printf "\\\\copy crash_acks FROM '%s'\n" "$counts"
        printf "\\\\copy crash_baseline FROM '%s'\n" "$WORK/baseline.tsv"
        cat "$HERE/verify.sql"
        printf "\\\\copy crash_consumed TO '%s'\n" "$WORK/baseline.tsv"
    } | psql -X -q -At -v ON_ERROR_STOP=1 -f - >"$WORK/verify-$round.out" ||
        { cat "$WORK/verify-$round.out"; die "the verification queries failed after crash $round"; }

    figures=$(sed -n 's/^figures //p' "$WORK/verify-$round.out")
    indexes=$(sed -n 's/^indexes //p' "$WORK/verify-$round.out")
    keys=$(sed -n 's/.*keys=\([0-9]*\).*/\1/p' <<<"$figures")
    if [ -z "$keys" ] || [ -z "$indexes" ]; then
        cat "$WORK/verify-$round.out"
        die "no figures after crash $round"
    fi
    CASES=$((CASES + keys))
    echo "crash $round: $figures"
    echo "crash $round: $indexes"
    failures=$(grep -c '^failure ' "$WORK/verify-$round.out" || true)
    if [ "$failures" -gt 0 ]; then
        FAILED=true
        echo "crash $round: $failures FAILURES (first 20):"
        grep '^failure ' "$WORK/verify-$round.out" | head -n 20 | sed 's/^failure /  /'
        KEEP_RUN_DIR=true
        cluster_stop crash
        echo "kept for inspection: $RUN_DIR (cluster data in $DATA, counts and baselines in $WORK)"
        break
    fi
done

echo "cases: $CASES"
if $FAILED; then
    echo "crash test: FAILED" >&2
    exit 1
fi
echo "crash test: ok"
