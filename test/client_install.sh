#!/usr/bin/env bash
# The client library as a user installs it (README, "C++ client"), on a machine without GoogleTest:
# configure and build with GoogleTest made unfindable, `cmake --install` into a temporary prefix, build and
# run a consumer project against the installed copy through find_package and through pkg-config, then
# `uninstall` and check that nothing of ours is left. Also: asking for the tests without GoogleTest fails
# the configure, and the project built as a subproject (add_subdirectory) builds no tests or benchmarks.
# Needs no server. Exits non-zero on the first failure; ends with "cases: N".
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
CONSUMER=$ROOT/test/client/consumer
work=$(mktemp -d "${TMPDIR:-/tmp}/pg_ratelimit_install.XXXXXX")
trap 'rm -rf "$work"' EXIT
prefix=$work/prefix
cases=0

pass() { cases=$((cases + 1)); echo "ok $cases - $*"; }
fail() { echo "FAILED: $*" >&2; exit 1; }
quiet() { "$@" >"$work/last.log" 2>&1 || { cat "$work/last.log" >&2; fail "$*"; }; }

# GoogleTest made unfindable: CMake's find_* commands skip where Debian's libgtest-dev puts it (its CMake
# package, its headers and libraries). libpqxx is found through pkg-config, which this does not affect.
multiarch=$(gcc -print-multiarch 2>/dev/null || echo x86_64-linux-gnu)
no_gtest="-DCMAKE_IGNORE_PATH="
for dir in /usr/include "/usr/lib/$multiarch" "/usr/lib/$multiarch/cmake/GTest" "/lib/$multiarch" \
    "/lib/$multiarch/cmake/GTest" /usr/lib/cmake/GTest /usr/src/googletest; do
    no_gtest+="$dir;"
done

# 1. Asking for the tests where GoogleTest cannot be found fails the configure, loudly.
if cmake -S "$ROOT" -B "$work/build-tests-on" -DPG_RATELIMIT_BUILD_TESTS=ON "$no_gtest" >"$work/on.log" 2>&1; then
    fail "configure with -DPG_RATELIMIT_BUILD_TESTS=ON succeeded without GoogleTest"
fi
grep -q 'Could NOT find GTest' "$work/on.log" || { cat "$work/on.log" >&2; fail "configure failed for another reason"; }
pass "-DPG_RATELIMIT_BUILD_TESTS=ON without GoogleTest: configure fails (Could NOT find GTest)"

# 2. The README's commands, without GoogleTest: the library, its example and the benchmark harness build;
# no test is configured.
build=$work/build
quiet cmake -S "$ROOT" -B "$build" "$no_gtest"
grep -q 'pg_ratelimit: tests OFF' "$work/last.log" || fail "tests not reported OFF without GoogleTest"
quiet cmake --build "$build" -j2
[ -f "$build/client/libpg_ratelimit_client.a" ] || fail "no libpg_ratelimit_client.a"
if grep -q '/test/' "$build/compile_commands.json"; then fail "test sources compiled without GoogleTest"; fi
quiet cmake --build "$build" --target help
for target in core_tests client_unit_tests client_server_tests hammer_tests; do
    if grep -q "\.\.\. $target\$" "$work/last.log"; then fail "target $target configured without GoogleTest"; fi
done
pass "cmake -S . -B build && cmake --build build without GoogleTest: library built, no tests"

# 3. Installed into a prefix other than the configured one (/usr/local): library, headers, CMake package,
# pkg-config file, and exactly the files the manifest lists.
quiet cmake --install "$build" --prefix "$prefix"
for file in libpg_ratelimit_client.a client.hpp errors.hpp pg_ratelimit_clientConfig.cmake \
    pg_ratelimit_clientConfigVersion.cmake pg_ratelimit_clientTargets.cmake pg_ratelimit_client.pc; do
    [ -n "$(find "$prefix" -name "$file")" ] || fail "$file not installed"
done
diff <(sort "$build/install_manifest.txt") <(find "$prefix" -type f | sort) || fail "manifest and prefix differ"
pass "cmake --install build --prefix: $(wc -l <"$build/install_manifest.txt") files, all in install_manifest.txt"

expected_output() {
    printf '%s\n' 'RateLimit-Policy: "api";q=5;w=10' 'RateLimit: "api";r=0;t=10' 'Retry-After: 3' \
        'no server: pqxx::broken_connection'
}

# 4. A consumer project: find_package(pg_ratelimit_client 0.2 REQUIRED), -Wpedantic -Werror at C++17 (raised
# to C++20 by the package when the client was built on libpqxx 8, which needs it).
quiet cmake -S "$CONSUMER" -B "$work/consumer-cmake" -DCMAKE_PREFIX_PATH="$prefix"
quiet cmake --build "$work/consumer-cmake"
diff <(expected_output) <("$work/consumer-cmake/consumer") || fail "the find_package consumer's output"
standard=$(sed -n 's/.*-std=\(c++[0-9]*\).*/\1/p' "$work/consumer-cmake/CMakeFiles/consumer.dir/flags.make" | head -n 1)
case "$(pkg-config --modversion libpqxx)" in
    6.* | 7.*) wanted=c++17 ;;
    *) wanted=c++20 ;;
esac
[ "$standard" = "$wanted" ] || fail "the find_package consumer built as ${standard:-no -std} with libpqxx $(pkg-config --modversion libpqxx), not $wanted"
pass "consumer through find_package(pg_ratelimit_client 0.2) builds (-Wpedantic -Werror, $standard) and runs"

# 5. The package's version file: 0.2.0 does not satisfy a request for 0.3, nor 0.1 (SameMinorVersion).
for other in 0.3 0.1; do
    if cmake -S "$CONSUMER" -B "$work/consumer-$other" -DCMAKE_PREFIX_PATH="$prefix" \
        -DPG_RATELIMIT_VERSION_WANTED=$other >"$work/v.log" 2>&1; then
        fail "find_package(pg_ratelimit_client $other) accepted version 0.2.0"
    fi
    grep -q 'version: 0.2.0' "$work/v.log" || { cat "$work/v.log" >&2; fail "version $other refused for another reason"; }
done
pass "find_package(pg_ratelimit_client 0.3 or 0.1) refuses the installed 0.2.0"

# 6. The same consumer through pkg-config, with the .pc file found by PKG_CONFIG_PATH only.
pc_dir=$(dirname "$(find "$prefix" -name pg_ratelimit_client.pc)")
export PKG_CONFIG_PATH=$pc_dir
[ "$(pkg-config --modversion pg_ratelimit_client)" = 0.2.0 ] || fail "pkg-config --modversion"
# shellcheck disable=SC2046 # the flags are words
quiet g++ -std=c++17 -Wall -Wextra -Wpedantic -Werror "$CONSUMER/consumer.cpp" -o "$work/consumer-pc" \
    $(pkg-config --cflags --libs pg_ratelimit_client)
diff <(expected_output) <("$work/consumer-pc") || fail "the pkg-config consumer's output"
pass "consumer through pkg-config --cflags --libs pg_ratelimit_client builds and runs"
unset PKG_CONFIG_PATH

# 7. Uninstall: every installed file and our own directories go; nothing named pg_ratelimit is left.
quiet cmake --build "$build" --target uninstall
left=$(find "$prefix" \( -type f -o -type l -o -name 'pg_ratelimit*' \))
[ -z "$left" ] || fail "left after uninstall: $left"
pass "cmake --build build --target uninstall leaves no file under the prefix"

# 8. As a subproject, with GoogleTest available: no tests, no benchmarks, no uninstall target of ours.
quiet cmake -S "$CONSUMER" -B "$work/consumer-sub" -DPG_RATELIMIT_SOURCE_DIR="$ROOT"
grep -q 'pg_ratelimit: tests OFF, benchmarks OFF' "$work/last.log" || fail "subproject: tests or benchmarks on"
quiet cmake --build "$work/consumer-sub" --target help
for target in core_tests client_unit_tests client_server_tests hammer_tests pg_ratelimit_bench uninstall; do
    if grep -q "\.\.\. $target\$" "$work/last.log"; then fail "subproject build has target $target"; fi
done
quiet cmake --build "$work/consumer-sub" -j2
diff <(expected_output) <("$work/consumer-sub/consumer") || fail "the subproject consumer's output"
pass "add_subdirectory(pg_ratelimit): library only (no tests, benchmarks or uninstall), consumer runs"

echo "cases: $cases"
