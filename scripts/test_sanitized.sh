#!/usr/bin/env bash
# The GoogleTest suites built with AddressSanitizer + UndefinedBehaviorSanitizer (build-asan/,
# -DPG_RATELIMIT_SANITIZE=ON) and run: the unit suites (core, client, benchmark statistics), then the
# server suites (client library, hammer) against a throwaway PostgreSQL 15 with the extension. ctest sets
# the sanitizers' options itself (cmake/sanitizer_env.cmake.in; LeakSanitizer suppressions in
# cmake/lsan.supp). libpq and libpqxx are not instrumented; the extension is built as usual.
# Exits non-zero if any test fails or any sanitizer reports.
set -euo pipefail
source "$(dirname "$0")/common.sh"

BUILD=$ROOT/build-asan
ensure_packages "${PACKAGES[@]}"
build_and_install_extension
log "building the GoogleTest suites with ASan + UBSan in $BUILD"
started=$(date +%s)
cmake -S "$ROOT" -B "$BUILD" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DPG_RATELIMIT_BUILD_TESTS=ON \
    -DPG_RATELIMIT_BUILD_BENCH=ON -DPG_RATELIMIT_SANITIZE=ON >/dev/null
cmake --build "$BUILD" -j2 >/dev/null
built=$(date +%s)

log "unit tests under ASan + UBSan"
ctest --test-dir "$BUILD" -L unit --no-tests=error --output-on-failure
unit_done=$(date +%s)

start_cluster
log "server tests under ASan + UBSan"
ctest --test-dir "$BUILD" -L server --no-tests=error --output-on-failure
server_done=$(date +%s)
stop_cluster

printf '\nbuild %ss, unit tests %ss, server tests %ss\n' $((built - started)) $((unit_done - built)) \
    $((server_done - unit_done))
