#!/usr/bin/env bash
# Runs every test against a throwaway PostgreSQL 15 cluster it starts and stops itself:
#   GoogleTest unit suites (pure core), pg_regress, isolation tests, GoogleTest server suites
#   (concurrency hammer, client library), pg_dump / pg_restore.
# Installs missing Debian packages first. Exits non-zero if anything fails.
set -euo pipefail
source "$(dirname "$0")/common.sh"

ensure_packages "${PACKAGES[@]}"
build_and_install_extension
log "building the client library, tests and benchmarks (CMake)"
cmake -S "$ROOT" -B "$ROOT/build" -DCMAKE_BUILD_TYPE=RelWithDebInfo ${PG_RATELIMIT_CMAKE_ARGS:-} >/dev/null
cmake --build "$ROOT/build" -j2 >/dev/null

failed=()
run_suite() {
    local name=$1
    shift
    log "$name"
    if ! "$@"; then
        failed+=("$name")
    fi
}

# --no-tests=error: a suite that finds no tests fails instead of passing vacuously.
run_suite "unit tests (GoogleTest, no server)" \
    ctest --test-dir "$ROOT/build" -L unit --no-tests=error --output-on-failure

start_cluster
run_suite "pg_regress" bash -c "make -C '$ROOT' -s installcheck ISOLATION= || { cat '$ROOT/regression.diffs'; exit 1; }"
run_suite "isolation tests" bash -c "make -C '$ROOT' -s installcheck REGRESS= || { cat '$ROOT/output_iso/regression.diffs'; exit 1; }"
run_suite "server tests (GoogleTest: concurrency hammer, client library)" \
    ctest --test-dir "$ROOT/build" -L server --no-tests=error --output-on-failure
run_suite "pg_dump / pg_restore" "$ROOT/test/dump_restore.sh"
stop_cluster

if [ ${#failed[@]} -gt 0 ]; then
    printf '\nFAILED: %s\n' "${failed[@]}" >&2
    exit 1
fi
printf '\nAll test suites passed.\n'
