#!/usr/bin/env bash
# One suite of the version matrix, run INSIDE a Debian root of another PostgreSQL version (scripts/matrix.sh
# enters the root and copies the clone to /build/pg_ratelimit first), with PG_MAJOR set to that version:
# the same scripts, builds and throwaway clusters as on the host (scripts/common.sh).
#   scripts/matrix_suite.sh build                   the extension (PGXS) and the CMake tree
#   scripts/matrix_suite.sh regress PATH            pg_regress on access path PATH (direct or sql)
#   scripts/matrix_suite.sh isolation PATH          the isolation suite on PATH
#   scripts/matrix_suite.sh pg_upgrade              test/pg_upgrade.sh (old and new clusters of this version)
#   scripts/matrix_suite.sh restore DIR             a pg_dump of PostgreSQL 15 (test/dump_restore.sh dump DIR,
#                                                   on the host) restored here and compared
#   scripts/matrix_suite.sh client                  the C++ tree on this Debian's libpqxx and compiler (-Werror,
#                                                   no benchmarks), then its unit tests (ctest -L unit)
#   scripts/matrix_suite.sh server                  the server tests of that build (ctest -L server: hammer,
#                                                   client library) against a cluster of this version
#   scripts/matrix_suite.sh crash                   test/crash/crash_test.sh with that build's load driver
#   scripts/matrix_suite.sh package                 the Debian packages built (dpkg-buildpackage) for this
#                                                   version, installed, CREATE EXTENSION and a decision on a
#                                                   cluster of the system's PostgreSQL, a client built on the
#                                                   installed -dev package; then purged
set -euo pipefail
source "$(dirname "$0")/common.sh"
[ "$PG_MAJOR" != 15 ] || die "run inside a matrix root, with PG_MAJOR set (scripts/matrix.sh)"
CMAKE_BUILD=/build/pg_ratelimit-cmake  # kept in the root between runs: incremental

case "${1:-}" in
    build)
        build_and_install_extension
        ;;
    regress | isolation)
        path=${2:?access path}
        build_and_install_extension >/dev/null 2>&1 || build_and_install_extension
        start_cluster -c pg_ratelimit.access_path="$path" -c shared_preload_libraries=pg_ratelimit
        if [ "$1" = regress ]; then
            make -C "$ROOT" -s installcheck PG_CONFIG="$PG_CONFIG" ISOLATION= || { cat "$ROOT/regression.diffs"; exit 1; }
        else
            make -C "$ROOT" -s installcheck PG_CONFIG="$PG_CONFIG" REGRESS= || { cat "$ROOT/output_iso/regression.diffs"; exit 1; }
        fi
        ;;
    pg_upgrade)
        "$ROOT/test/pg_upgrade.sh"
        ;;
    restore)
        build_and_install_extension >/dev/null 2>&1 || build_and_install_extension
        start_cluster -c shared_preload_libraries=pg_ratelimit
        "$ROOT/test/dump_restore.sh" restore "${2:?dump directory}"
        ;;
    client)
        cmake -S "$ROOT" -B "$CMAKE_BUILD" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DPG_RATELIMIT_BUILD_TESTS=ON \
            -DPG_RATELIMIT_BUILD_BENCH=OFF -DPG_RATELIMIT_WERROR=ON | grep 'pg_ratelimit:' || true
        cmake --build "$CMAKE_BUILD" -j2 >"$CMAKE_BUILD.log" 2>&1 || { tail -n 60 "$CMAKE_BUILD.log"; exit 1; }
        ctest --test-dir "$CMAKE_BUILD" -L unit --no-tests=error --output-on-failure
        ;;
    server)
        build_and_install_extension >/dev/null 2>&1 || build_and_install_extension
        start_cluster -c shared_preload_libraries=pg_ratelimit
        ctest --test-dir "$CMAKE_BUILD" -L server --no-tests=error --output-on-failure
        ;;
    crash)
        "$ROOT/test/crash/crash_test.sh" "$CMAKE_BUILD/test/crash/crash_load"
        ;;
    package)
        "$ROOT/test/package.sh"
        ;;
    *) die "usage: $0 build | regress PATH | isolation PATH | pg_upgrade | restore DIR | client | server | crash | package" ;;
esac
