#!/usr/bin/env bash
# The pg_regress and isolation suites with the extension checked inside real backends, against a
# throwaway cluster of a private PostgreSQL 15 (scripts/common.sh).
#
#   test/sanitized_backend.sh [asan|valgrind]
#
# asan (the default): the extension is built with AddressSanitizer and UndefinedBehaviorSanitizer (plus
#   float-cast-overflow, and -fno-wrapv so that signed overflow is checked although PostgreSQL's flags
#   make it wrap), and the postmaster runs with libasan preloaded; a report aborts the backend. Both
#   access paths. PostgreSQL itself is not instrumented. Its allocator (palloc) carves chunks out of
#   blocks it gets from malloc, so an overrun of a palloc'd chunk, or a use after pfree, goes unseen
#   unless it leaves the block. Fully checked: the extension's stack, globals and malloc'd or new'd
#   memory, and the undefined behaviour of its code; libasan's interceptors also check memcpy, strlen
#   and the like, in every server process, against malloc'd blocks.
# valgrind: the normal build, the postmaster run under memcheck (--trace-children=yes; the backends it
#   forks are checked too), suppressions in test/sanitized_backend/valgrind.supp. Adds the use of
#   uninitialised memory (palloc'd memory counts as uninitialised only while its block is fresh from
#   malloc, not once a block is reused). Some 30 to 60 times as slow as a normal run: the direct access
#   path only.
#
# The extension is built in a copy of the sources in the run directory, never in extension/: the normal
# build's objects are neither used nor overwritten. ACCESS_PATHS overrides the access paths.
# SANITIZED_BACKEND_PATCH, a patch (-p1) applied to the copy before the build, serves to show that a
# defect is caught. Every report is printed. At the end, deliberate defects (test/sanitized_backend/
# canary.c) must be reported too. Ends with "cases: N" (the pg_regress and isolation tests run); exits
# non-zero on any failed test, any report, any crashed server process or a canary not reported.
set -euo pipefail
# shellcheck source-path=SCRIPTDIR source=../scripts/common.sh
source "$(dirname "$0")/../scripts/common.sh"

MODE=${1:-asan}
case $MODE in asan | valgrind) ;; *) die "usage: $0 [asan|valgrind]" ;; esac
HERE=$ROOT/test/sanitized_backend
# memcheck would take both paths' suites beyond a few minutes: it runs the direct path's, the one that
# works on heap tuples, indexes and snapshots through PostgreSQL's internal functions.
if [ "$MODE" = asan ]; then ACCESS_PATHS=${ACCESS_PATHS:-direct sql}; else ACCESS_PATHS=${ACCESS_PATHS:-direct}; fi
# The asan build's flags. They come after PostgreSQL's (PG_CXXFLAGS is appended to its CXXFLAGS), so
# -fno-wrapv overrides -fwrapv, under which gcc does not check signed overflow.
SANITIZE=-fsanitize=address,undefined,float-cast-overflow
ASAN_CXXFLAGS="$SANITIZE -fno-sanitize-recover=all -fno-omit-frame-pointer -fno-wrapv"

if [ "$MODE" = valgrind ]; then ensure_packages "${PACKAGES[@]}" valgrind; else ensure_packages "${PACKAGES[@]}"; fi
private_postgres
SRC=$RUN_DIR/sanitized-src
TOOLS=$RUN_DIR/sanitizer-tools
REPORTS=$RUN_DIR/sanitizer-reports
mkdir -p "$SRC" "$TOOLS" "$REPORTS"
if [ "$(id -u)" -eq 0 ]; then chown postgres: "$REPORTS"; fi   # the server writes the reports

# --- build ----------------------------------------------------------------------------------------------

log "copying the extension's sources to $SRC"
(cd "$ROOT" && cp -R Makefile pg_ratelimit.control extension sql expected specs "$SRC/")
find "$SRC" \( -name '*.o' -o -name '*.so' -o -name '*.bc' -o -name .deps \) -prune -exec rm -rf {} +
if [ -n "${SANITIZED_BACKEND_PATCH:-}" ]; then
    log "applying $SANITIZED_BACKEND_PATCH to the copy"
    patch -d "$SRC" -p1 <"$SANITIZED_BACKEND_PATCH"
fi

# PG_CXXFLAGS and PG_LDFLAGS in the environment: the Makefile appends its own flags to them, whereas on
# make's command line they would replace them.
build_env=()
canary_flags=(-O0)
if [ "$MODE" = asan ]; then
    build_env=(PG_CXXFLAGS="$ASAN_CXXFLAGS" PG_LDFLAGS="$SANITIZE")
    # shellcheck disable=SC2054  # the commas belong to -fsanitize
    canary_flags+=(-fsanitize=address,undefined -fno-sanitize-recover=all -fno-wrapv)
fi
log "building the extension ($MODE) and installing it into $($PG_CONFIG --pkglibdir)"
env "${build_env[@]}" make -C "$SRC" -s -j2 PG_CONFIG="$PG_CONFIG"
env "${build_env[@]}" make -C "$SRC" -s install PG_CONFIG="$PG_CONFIG" >/dev/null
gcc -shared -fPIC -Wall -Wextra -Werror -isystem "$($PG_CONFIG --includedir-server)" "${canary_flags[@]}" \
    "$HERE/canary.c" -o "$TOOLS/canary.so"

# --- the server -----------------------------------------------------------------------------------------

cluster_init sanitized
SERVER_LOG=$(cluster_dir sanitized)/server.log
if [ "$MODE" = asan ]; then
    gcc -shared -fPIC -O2 -Wall -Wextra -Werror "$HERE/swift_demangle_stub.c" "$HERE/ubsan_default_options.c" \
        -o "$TOOLS/sanitizer_preload.so"
    # libasan first, as it requires, then two workarounds (see their sources) for the postmaster to start
    # and for UBSan's options to reach the backends. No leak check (a backend's memory goes with its exit);
    # abort on a report, so that the postmaster sees a crash.
    SERVER_PRELOAD="$(gcc -print-file-name=libasan.so) $TOOLS/sanitizer_preload.so"
    SERVER_ASAN_OPTIONS="detect_leaks=0:halt_on_error=1:abort_on_error=1:detect_stack_use_after_return=1:log_path=$REPORTS/asan"
    RUNTIME=libasan
else
    # After initdb (which would run its postgres under memcheck too): the private copy's postgres becomes
    # a wrapper that runs the real one under memcheck. -q: a log file stays empty unless memcheck reports.
    mv "$PG_BIN/postgres" "$PG_BIN/postgres.real"
    cat >"$PG_BIN/postgres" <<WRAPPER
#!/bin/sh
exec valgrind -q --tool=memcheck --trace-children=yes --leak-check=no --num-callers=40 --track-origins=yes \\
    --suppressions="$HERE/valgrind.supp" --log-file="$REPORTS/valgrind.%p" "$PG_BIN/postgres.real" "\$@"
WRAPPER
    chmod 755 "$PG_BIN/postgres"
    RUNTIME=vgpreload_memcheck
fi

# start_server [server options...]: starts the cluster in the sanitizer's environment.
start_server() {
    if [ "$MODE" = asan ]; then
        LD_PRELOAD=$SERVER_PRELOAD ASAN_OPTIONS=$SERVER_ASAN_OPTIONS cluster_start sanitized "$@"
    else
        # No autovacuum: under memcheck an automatic ANALYZE holds its snapshot long enough to keep the
        # churn of sql/storage.sql from pruning, which then counts non-HOT updates.
        cluster_start sanitized -c autovacuum=off "$@"
    fi
    use_cluster sanitized
}

# Waits until the server accepts connections again (after a crashed backend, the others are terminated
# and the cluster recovers).
wait_until_ready() {
    local _
    for _ in $(seq 1 60); do
        psql -X -At -d postgres -c 'SELECT 1' >/dev/null 2>&1 && return 0
        sleep 1
    done
    return 1
}

# Stops the cluster once it has recovered: PostgreSQL 15.20's postmaster never completes a fast shutdown
# requested while the startup process is still recovering from a crashed backend (pg_ctl gives up after
# 60 s and the postmaster stays). Immediate should fast not have stopped it all the same.
stop_server() {
    [ -f "$(cluster_dir sanitized)/data/postmaster.pid" ] || return 0
    use_cluster sanitized
    wait_until_ready || true
    cluster_stop sanitized
    if [ -f "$(cluster_dir sanitized)/data/postmaster.pid" ]; then cluster_stop sanitized immediate; fi
}

# A backend that loaded the extension has the sanitizer's runtime (or memcheck's) and the extension
# mapped: else a run without reports would prove nothing.
check_instrumented() {
    local maps
    maps=$(psql -X -At -v ON_ERROR_STOP=1 -c "LOAD 'pg_ratelimit'" -c "SELECT pg_read_file('/proc/self/maps')") ||
        die "a backend could not load pg_ratelimit"
    grep -q "/${RUNTIME}[^/]*\.so" <<<"$maps" || die "the backend runs without $RUNTIME"
    grep -q "$($PG_CONFIG --pkglibdir)/pg_ratelimit\.so" <<<"$maps" || die "the backend did not load pg_ratelimit.so"
}

# --- reports --------------------------------------------------------------------------------------------
# AddressSanitizer's and memcheck's: files in $REPORTS. UndefinedBehaviorSanitizer's: in the server log
# (ubsan_reports FROM and crashed FROM read it from line FROM on).

report_files() { find "$REPORTS" -type f -size +0 | sort; }
ubsan_reports() { tail -n +"$1" "$SERVER_LOG" | grep -A 40 ': runtime error: ' || true; }
# Server processes the postmaster saw die (a report aborts the backend).
crashed() { tail -n +"$1" "$SERVER_LOG" | grep -E 'terminated by signal|server process \(PID [0-9]+\) exited with exit code' || true; }
log_lines() { wc -l <"$SERVER_LOG"; }

# At exit, also an early one (say, a report as the extension loads fails check_instrumented): the reports
# are printed unless the verdict did, and the server is stopped before scripts/common.sh would stop it
# with a fast shutdown that can hang (stop_server).
VERDICT=false
# shellcheck disable=SC2317  # run at exit, through on_exit
finish_sanitized_run() {
    local file
    if ! $VERDICT; then
        while read -r file; do
            log "report: $file"
            cat "$file"
        done < <(report_files)
        [ -f "$SERVER_LOG" ] && ubsan_reports 1
    fi
    stop_server
}
on_exit finish_sanitized_run

# --- the suites -----------------------------------------------------------------------------------------

CASES=0
SUMMARY=()
FAILED=()

# run_tests NAME DIFFS MAKE-ARGS...: one installcheck (pg_regress or isolation) in the copy; DIFFS is
# where pg_regress leaves its differences.
run_tests() {
    local name=$1 diffs=$SRC/$2 output rc=0 count started seconds
    shift 2
    log "$name"
    wait_until_ready || true
    started=$(date +%s)
    output=$(make -C "$SRC" -s installcheck PG_CONFIG="$PG_CONFIG" "$@" 2>&1) || rc=$?
    seconds=$(($(date +%s) - started))
    echo "$output"
    # " All 16 tests passed. " / " 2 of 16 tests failed. "
    count=$(sed -n -e 's/^ *All \([0-9]*\) tests passed\. *$/\1/p' -e 's/^ *[0-9]* of \([0-9]*\) tests failed\. *$/\1/p' \
        <<<"$output" | tail -n 1)
    CASES=$((CASES + ${count:-0}))
    if [ "$rc" -ne 0 ] || [ -z "$count" ]; then
        FAILED+=("$name")
        if [ -f "$diffs" ]; then cat "$diffs"; fi
    fi
    SUMMARY+=("$(printf '%-28s %3s tests %5ss' "$name" "${count:-?}" "$seconds")")
}

for path in $ACCESS_PATHS; do
    log "starting the cluster ($MODE, access path $path)"
    start_server -c pg_ratelimit.access_path="$path" -c shared_preload_libraries=pg_ratelimit
    check_instrumented
    run_tests "pg_regress ($path path)" regression.diffs ISOLATION=
    run_tests "isolation ($path path)" output_iso/regression.diffs REGRESS=
    stop_server
done
mapfile -t FOUND < <(report_files)
UBSAN_FOUND=$(ubsan_reports 1)
CRASHED=$(crashed 1)

# --- the canaries: a report must reach the script -------------------------------------------------------

canaries=(heap_overflow)
[ "$MODE" = asan ] && canaries+=(signed_overflow)
log "canaries: ${canaries[*]} in backends must be reported"
start_server
before=$(log_lines)
CANARY_RESULTS=()
for canary in "${canaries[@]}"; do
    wait_until_ready || true
    psql -X -q -c "CREATE FUNCTION pg_temp.canary() RETURNS int LANGUAGE c
                   AS '$TOOLS/canary.so', 'sanitizer_canary_$canary'" -c 'SELECT pg_temp.canary()' >/dev/null 2>&1 || true
done
stop_server
canary_reports=$(comm -13 <(printf '%s\n' "${FOUND[@]}") <(report_files) | xargs -r cat)$(ubsan_reports "$before")
canaries_ok=true
for canary in "${canaries[@]}"; do
    if grep -q "sanitizer_canary_$canary" <<<"$canary_reports"; then
        CANARY_RESULTS+=("canary $canary: reported")
    else
        CANARY_RESULTS+=("canary $canary: NOT reported (the instrumentation or the collection of reports fails)")
        canaries_ok=false
    fi
done

# --- verdict --------------------------------------------------------------------------------------------

VERDICT=true
status=0
for file in "${FOUND[@]}"; do
    log "report: $file"
    cat "$file"
    status=1
done
if [ -n "$UBSAN_FOUND" ]; then
    log "UndefinedBehaviorSanitizer reports in $SERVER_LOG"
    echo "$UBSAN_FOUND"
    status=1
fi
if [ -n "$CRASHED" ]; then
    log "crashed server processes"
    echo "$CRASHED"
    status=1
fi
echo
printf '%s\n' "${SUMMARY[@]}"
echo "sanitizer reports: $((${#FOUND[@]} + $(grep -c ': runtime error: ' <<<"$UBSAN_FOUND" || true)))"
echo "crashed server processes: $(grep -c . <<<"$CRASHED" || true)"
printf '%s\n' "${CANARY_RESULTS[@]}"
$canaries_ok || status=1
if [ ${#FAILED[@]} -gt 0 ]; then
    printf 'FAILED: %s\n' "${FAILED[@]}"
    status=1
fi
echo "cases: $CASES"
exit $status
