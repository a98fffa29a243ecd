#!/usr/bin/env bash
# Runs every test, against throwaway PostgreSQL 15 clusters it starts and stops itself, then the version
# matrix (the extension's suites on PostgreSQL 17 and 18, in Debian roots: scripts/matrix.sh), and ends
# with a table of the suites (version, result, cases, time). Installs missing Debian packages first. Exits
# non-zero if any suite fails. Each suite's full output is kept in build/test-logs/<suite>.log.
#   scripts/test.sh              everything
#   scripts/test.sh --pg 17      only the matrix's suites on PostgreSQL 17 (or 18), for a developer
set -euo pipefail
source "$(dirname "$0")/common.sh"

MATRIX_VERSIONS=(17 18)
ONLY_MATRIX=()
while [ $# -gt 0 ]; do
    case "$1" in
        --pg) ONLY_MATRIX+=("${2:?--pg needs a version}"); shift 2 ;;
        *) die "usage: $0 [--pg VERSION]..." ;;
    esac
done
[ ${#ONLY_MATRIX[@]} -eq 0 ] || MATRIX_VERSIONS=("${ONLY_MATRIX[@]}")

RUN_STARTED=$(date +%s)
LOGS=$ROOT/build/test-logs
rm -rf "$LOGS"
mkdir -p "$LOGS"
SUMMARY=()
FAILED=()
FAILED_LOGS=()

# The matrix's Debian roots take minutes to make the first time (debootstrap, then PostgreSQL and the build
# dependencies from Debian's archive): made in the background while the PostgreSQL 15 suites run, and
# waited for when the matrix starts. Cached between runs (scripts/matrix_root.sh).
ensure_packages debootstrap
declare -A ROOT_JOBS=()
for version in "${MATRIX_VERSIONS[@]}"; do
    "$ROOT/scripts/matrix_root.sh" make "$version" >"$LOGS/matrix_root_$version.log" 2>&1 &
    ROOT_JOBS[$version]=$!
done


# How many cases a suite's output reports, by the tool that ran it.
count_ctest() { sed -n 's/.*tests passed, [0-9]* tests failed out of \([0-9]*\).*/\1/p' "$1" | tail -n 1; }
count_pg_regress() {
    # " All 13 tests passed. " / " 2 of 13 tests failed. " (PostgreSQL 17 and later: "# All 13 tests passed.")
    sed -n -e 's/^[ #]*All \([0-9]*\) tests passed\. *$/\1/p' -e 's/^[ #]*[0-9]* of \([0-9]*\) tests failed\. *$/\1/p' "$1" |
        tail -n 1
}
# Scripts of our own end with a line "cases: N".
count_cases() { sed -n 's/^cases: \([0-9]*\).*/\1/p' "$1" | tail -n 1; }

# The root was made or found cached: one case.
count_root() { echo 1; }

suite_log() { echo "$LOGS/$(echo "$1" | tr -c 'a-zA-Z0-9_\n' '_').log"; }

# run_suite NAME COUNTER COMMAND...: runs COMMAND, its output to the terminal and to the suite's log, on
# PostgreSQL $SUITE_VERSION (15 unless the matrix sets it).
SUITE_VERSION=15
run_suite() {
    local name=$1 counter=$2 file status started seconds cases
    shift 2
    file=$(suite_log "$name $SUITE_VERSION")
    log "$name (PostgreSQL $SUITE_VERSION)"
    started=$(date +%s)
    if "$@" 2>&1 | tee "$file"; then
        status=passed
    else
        status=FAILED
        FAILED+=("$name (PostgreSQL $SUITE_VERSION)")
        FAILED_LOGS+=("$file")
    fi
    seconds=$(($(date +%s) - started))
    cases=$($counter "$file")
    SUMMARY+=("$(printf '%-58s %4s  %-7s %7s %6ss' "$name" "$SUITE_VERSION" "$status" "${cases:-?}" "$seconds")")
}

# The version matrix: VERSION's root (made in the background above), the clone copied into it, then the
# extension's suites there (scripts/matrix_suite.sh).
root_ready() {  # root_ready VERSION STATUS: the background job's log and status, then the clone copied in
    cat "$LOGS/matrix_root_$1.log"
    [ "$2" -eq 0 ] || { echo "the Debian root for PostgreSQL $1 could not be made (see above): the matrix needs Debian's archive"; return 1; }
    "$ROOT/scripts/matrix_root.sh" copy "$1"
}
in_matrix_root() {  # in_matrix_root VERSION SUITE ARGS...
    local version=$1
    shift
    "$ROOT/scripts/matrix_root.sh" run "$version" "cd /build/pg_ratelimit && PG_MAJOR=$version scripts/matrix_suite.sh $*"
}
run_matrix() {
    local version
    for version in "${MATRIX_VERSIONS[@]}"; do
        SUITE_VERSION=$version
        local status=0
        wait "${ROOT_JOBS[$version]}" || status=$?  # in this shell: the job is its child
        run_suite "matrix: Debian root with PostgreSQL $version (made or cached)" count_root root_ready "$version" "$status"
        for path in direct sql; do
            run_suite "pg_regress ($path path)" count_pg_regress in_matrix_root "$version" regress "$path"
            run_suite "isolation tests ($path path)" count_pg_regress in_matrix_root "$version" isolation "$path"
        done
        run_suite "pg_upgrade with the memory save file carried over" count_cases in_matrix_root "$version" pg_upgrade
        run_suite "C++ tree on this Debian's libpqxx and compiler (-Werror), unit tests" count_ctest \
            in_matrix_root "$version" client
        run_suite "server tests: hammer, client library (direct path)" count_ctest in_matrix_root "$version" server
        run_suite "crash recovery: kill -9 under load, amcheck (direct path)" count_cases in_matrix_root "$version" crash
        run_suite "Debian packages: built, installed, CREATE EXTENSION, a client built on them" count_cases \
            in_matrix_root "$version" package
        if [ -f "$ROOT/build/matrix-dump/dump" ]; then
            run_suite "pg_dump of PostgreSQL 15 restored into $version (limits, overrides, keys)" count_cases \
                in_matrix_root "$version" restore /src/build/matrix-dump
        fi
    done
    SUITE_VERSION=15
}

print_summary() {
    printf '\n%-58s %4s  %-7s %7s %7s\n' "suite" "PG" "result" "cases" "time"
    printf '%s\n' "${SUMMARY[@]}"
    printf '%-58s %4s  %-7s %7s %6ss\n' "total" "" "" "" "$(($(date +%s) - RUN_STARTED))"
    if [ ${#FAILED[@]} -gt 0 ]; then
        # The end of each failed suite's log again, so that a report showing only the end of this output
        # still says why.
        local i
        for i in "${!FAILED[@]}"; do
            printf '\n--- the last 20 lines of %s ---\n' "${FAILED[$i]}"
            tail -n 20 "${FAILED_LOGS[$i]}"
        done
        printf '\nFAILED: %s\n' "${FAILED[@]}" >&2
        printf 'Full output of each suite: %s\n' "$LOGS" >&2
        exit 1
    fi
    printf '\nAll test suites passed.\n'
}

if [ ${#ONLY_MATRIX[@]} -gt 0 ]; then
    run_matrix
    print_summary
    exit 0
fi

ensure_packages "${PACKAGES[@]}"
build_and_install_extension
log "building the client library, tests and benchmarks (CMake)"
cmake -S "$ROOT" -B "$ROOT/build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DPG_RATELIMIT_BUILD_TESTS=ON \
    -DPG_RATELIMIT_BUILD_BENCH=ON -DPG_RATELIMIT_BUILD_GATE=ON ${PG_RATELIMIT_CMAKE_ARGS:-} >/dev/null
cmake --build "$ROOT/build" -j2 >/dev/null
log "building the GoogleTest suites again with AddressSanitizer + UndefinedBehaviorSanitizer (build-asan)"
cmake -S "$ROOT" -B "$ROOT/build-asan" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DPG_RATELIMIT_BUILD_TESTS=ON \
    -DPG_RATELIMIT_BUILD_BENCH=OFF -DPG_RATELIMIT_SANITIZE=ON >/dev/null
cmake --build "$ROOT/build-asan" -j2 >/dev/null


regress() { make -C "$ROOT" -s installcheck PG_CONFIG="$PG_CONFIG" ISOLATION= || { cat "$ROOT/regression.diffs"; return 1; }; }
isolation() { make -C "$ROOT" -s installcheck PG_CONFIG="$PG_CONFIG" REGRESS= || { cat "$ROOT/output_iso/regression.diffs"; return 1; }; }

# --no-tests=error: a suite that finds no tests fails instead of passing vacuously.
run_suite "unit tests (GoogleTest, no server)" count_ctest \
    ctest --test-dir "$ROOT/build" -L unit --no-tests=error --output-on-failure
run_suite "unit tests under ASan + UBSan" count_ctest \
    ctest --test-dir "$ROOT/build-asan" -L unit --no-tests=error --output-on-failure
run_suite "fuzz: core (libFuzzer, ASan + UBSan, 60 s)" count_cases "$ROOT/scripts/fuzz.sh" 60
run_suite "client install (no GoogleTest; find_package, pkg-config)" count_cases "$ROOT/test/client_install.sh"
run_suite "Debian packages built for PostgreSQL 15 (dpkg-buildpackage, lintian)" count_cases \
    "$ROOT/test/package.sh" --build-only

# Every server-side suite runs once per access path (extension/state/state_access.hpp), against a cluster
# whose configuration sets it, so that every session of every role uses it; same expected results.
for path in direct sql; do
    start_cluster -c pg_ratelimit.access_path=$path -c shared_preload_libraries=pg_ratelimit
    run_suite "pg_regress ($path path)" count_pg_regress regress
    run_suite "isolation tests ($path path)" count_pg_regress isolation
    run_suite "server tests: hammer, client library ($path path)" count_ctest \
        ctest --test-dir "$ROOT/build" -L server --no-tests=error --output-on-failure
    run_suite "server tests under ASan + UBSan ($path path)" count_ctest \
        ctest --test-dir "$ROOT/build-asan" -L server --no-tests=error --output-on-failure
    run_suite "pg_dump / pg_restore ($path path)" count_cases "$ROOT/test/dump_restore.sh"
    # The script for servers you already run, against this one, so that it cannot rot; and a dump of this
    # major version for the matrix to restore into the others.
    if [ "$path" = direct ]; then
        run_suite "pg_dump of PostgreSQL 15 for the version matrix to restore" count_cases \
            "$ROOT/test/dump_restore.sh" dump "$ROOT/build/matrix-dump"
        run_suite "an existing server: scripts/test-existing.sh (regress, isolation, hammer, client)" count_cases \
            "$ROOT/scripts/test-existing.sh" "host=$CLUSTER_DIR port=5432 user=postgres dbname=postgres"
    fi
    stop_cluster
    # These start clusters of their own.
    run_suite "crash recovery: kill -9 under load, amcheck ($path path)" count_cases \
        env ACCESS_PATH=$path "$ROOT/test/crash/crash_test.sh" "$ROOT/build/test/crash/crash_load"
    run_suite "hostile review findings and attacks ($path path)" count_cases \
        env ACCESS_PATH=$path "$ROOT/test/hostile/run.sh"
    run_suite "storage modes: standby, restart, crash, eviction, pgbench ($path path)" count_cases \
        env ACCESS_PATH=$path "$ROOT/test/storage_modes.sh"
    run_suite "statistics: pgbench exact counts, databases, overflow, kill -9, no preload ($path path)" count_cases \
        env ACCESS_PATH=$path "$ROOT/test/stats.sh"
    run_suite "leases: session end, terminate, kill -9, 2PC, pgbench under a pg_locks sampler ($path path)" count_cases \
        env ACCESS_PATH=$path "$ROOT/test/leases.sh"
    run_suite "bounded cleanup: 1,000,000 keys, loop and pg_cron, sizes bounded ($path path)" count_cases \
        env ACCESS_PATH=$path "$ROOT/test/cleanup_bounded.sh"
done

# Past one machine: PL/Proxy and the client's routing over partitions (scripts/cluster.sh, 2 and 4 partitions).
run_suite "scale-out: PL/Proxy and client routing, 2 and 4 partitions (exactness, placement, failures)" count_cases \
    "$ROOT/test/scale_out/scale_out_test.sh"
run_suite "scale-out attacks: a tenant, a DBA and a careless caller against the proxy (2 partitions)" count_cases \
    "$ROOT/test/scale_out/attacks_test.sh"

# The gate (gate/, docs/gate.md): pg_ratelimit_gate with real processes on loopback (its unit tests run with
# the other unit tests: label unit).
run_suite "gate: pg_ratelimit_gate with real processes (two gates, JWT, throttling, restarts)" count_cases \
    "$ROOT/test/gate/gate_test.sh" "$ROOT/build/gate/pg_ratelimit_gate"
run_suite "gate attacks: a hostile client, an operator and a careless one against the gate" count_cases \
    env GATE_BIN="$ROOT/build/gate/pg_ratelimit_gate" "$ROOT/test/gate/attacks_test.sh"

# pg_upgrade of a cluster using the extension (same major version: Debian has no two in one release).
run_suite "pg_upgrade with the memory save file carried over" count_cases "$ROOT/test/pg_upgrade.sh"

# An upgrade in place from the previous release (a worktree of its commit), then ALTER EXTENSION UPDATE.
run_suite "upgrade in place from release 0.1.0 (ALTER EXTENSION UPDATE, memory save file)" count_cases \
    "$ROOT/test/upgrade.sh"

# The pg_regress and isolation suites again, with the extension built with ASan + UBSan and loaded in
# real backends (clusters of its own; `test/sanitized_backend.sh valgrind` runs memcheck instead, slower).
run_suite "pg_regress + isolation, extension under ASan + UBSan (both paths)" count_cases \
    "$ROOT/test/sanitized_backend.sh"

run_matrix
print_summary
