#!/usr/bin/env bash
# Static checks: clang-format (must be a no-op) and clang-tidy (.clang-tidy, warnings are errors) over
# the extension (PGXS build, compile commands captured with bear) and the CMake build (core, client,
# tests, benchmarks, gate). Exits non-zero on any finding.
set -euo pipefail
source "$(dirname "$0")/common.sh"
ensure_packages "${PACKAGES[@]}" clang-format clang-tidy bear
cd "$ROOT"

log "clang-format"
mapfile -t sources < <(git ls-files '*.cpp' '*.hpp' '*.c')
clang-format --dry-run -Werror "${sources[@]}"

log "clang-tidy: extension (PGXS)"
mkdir -p build/pgxs
make -s clean
bear --output build/pgxs/compile_commands.json -- make -s -j2
# PGXS passes gcc-only warning flags; clang must not choke on them.
run-clang-tidy-14 -p build/pgxs -quiet -extra-arg=-Wno-unknown-warning-option 'extension/.*\.cpp' >build/pgxs/tidy.log 2>&1 \
    || { grep -E 'warning:|error:' build/pgxs/tidy.log; exit 1; }

log "clang-tidy: client, tests, benchmarks, gate (CMake)"
# A build directory of its own: clang cannot read GCC's precompiled headers, which the test command's build
# (build/) keeps.
cmake -S . -B build/tidy -DCMAKE_BUILD_TYPE=RelWithDebInfo -DPG_RATELIMIT_BUILD_TESTS=ON -DPG_RATELIMIT_BUILD_BENCH=ON \
    -DPG_RATELIMIT_BUILD_GATE=ON -DCMAKE_DISABLE_PRECOMPILE_HEADERS=ON >/dev/null
cmake --build build/tidy -j2 >/dev/null
run-clang-tidy-14 -p build/tidy -quiet '(client|test|bench|gate)/.*\.cpp' >build/tidy/tidy.log 2>&1 \
    || { grep -E 'warning:|error:' build/tidy/tidy.log; exit 1; }
echo "lint: clean"
