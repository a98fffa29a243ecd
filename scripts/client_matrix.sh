#!/usr/bin/env bash
# The C++ side (client library, GoogleTest suites, crash driver, benchmark harness) on every libpqxx the
# project builds with, from one source:
#   15  the host: Debian 12, PostgreSQL 15, libpqxx 6.4, g++ 12 (C++17)
#   17  the PostgreSQL 17 root: Debian 13, libpqxx 7.10, g++ 14 (C++17)
#   18  the PostgreSQL 18 root: Debian sid, libpqxx 8.0, g++ 16 (C++20, as libpqxx 8 needs)
# the roots made (or reused) by scripts/matrix_root.sh. For each: the CMake tree configured with the tests
# and the benchmarks and built with -Werror, ctest -L unit, ctest -L server against a throwaway server of
# that PostgreSQL with the extension preloaded (one test at a time, as scripts/test.sh runs them), and
# test/client_install.sh (install, find_package and pkg-config consumers, uninstall, subproject).
#
#   scripts/client_matrix.sh [15] [17] [18]      (default: all three, one after the other)
#
# In a root the tree is copied to /build/pg_ratelimit-client/tree and built in /build/pg_ratelimit-client/
# build (never /build/pg_ratelimit, which scripts/matrix_root.sh copy fills); on the host it builds in
# build-client-matrix/. Builds are incremental. Ends with a table; exits non-zero if any step failed.
set -euo pipefail
# shellcheck source-path=SCRIPTDIR source=common.sh
source "$(dirname "$0")/common.sh"

# --inside VERSION BUILD_DIR: the steps, in this tree, where libpqxx and PostgreSQL VERSION are installed
# (run with PG_MAJOR=VERSION in the environment: common.sh reads it). Prints one line per step:
# RESULT <step> <status> <seconds> <detail>.
inside() {
    local version=$1 build=$2 started status log
    [ "$PG_MAJOR" = "$version" ] || die "--inside $version needs PG_MAJOR=$version in the environment"
    step() {  # step NAME DETAIL STATUS STARTED
        echo "RESULT $1 $3 $(($(date +%s) - $4)) ${2:-?}"
    }
    mkdir -p "$build"
    log=$build/client_matrix
    mkdir -p "$log"

    started=$(date +%s)
    status=ok
    cmake -S "$ROOT" -B "$build" -DPG_RATELIMIT_BUILD_TESTS=ON -DPG_RATELIMIT_BUILD_BENCH=ON -DPG_RATELIMIT_WERROR=ON \
        >"$log/configure.log" 2>&1 && cmake --build "$build" -j2 >"$log/build.log" 2>&1 || status=FAILED
    [ $status = ok ] || tail -n 40 "$log/configure.log" "$log/build.log" >&2
    step build "libpqxx-$(sed -n 's/.*pg_ratelimit: libpqxx \([^:]*\): its users built as \(C++[0-9]*\).*/\1,\2/p' \
        "$log/configure.log")" $status "$started"
    [ $status = ok ] || return 0

    for label in unit server; do
        started=$(date +%s)
        status=ok
        if [ $label = server ]; then
            # shellcheck disable=SC2119  # no extra make arguments
            if ! { build_and_install_extension >"$log/extension.log" 2>&1 &&
                start_cluster -c shared_preload_libraries=pg_ratelimit >"$log/cluster.log" 2>&1; }; then
                tail -n 20 "$log/extension.log" "$log/cluster.log" >&2
                step server none FAILED "$started"
                continue
            fi
            started=$(date +%s)
        fi
        ctest --test-dir "$build" -L $label --no-tests=error --output-on-failure >"$log/$label.log" 2>&1 || status=FAILED
        [ $status = ok ] || grep -A40 'tests passed' "$log/$label.log" >&2 || tail -n 40 "$log/$label.log" >&2
        step $label "$(sed -n 's/.*tests passed, \([0-9]*\) tests failed out of \([0-9]*\).*/\1 failed of \2/p' \
            "$log/$label.log" | tail -n 1 | tr ' ' _)" $status "$started"
    done
    stop_cluster || true

    started=$(date +%s)
    status=ok
    bash "$ROOT/test/client_install.sh" >"$log/install.log" 2>&1 || { status=FAILED; tail -n 30 "$log/install.log" >&2; }
    step install "$(sed -n 's/^cases: //p' "$log/install.log")_cases" $status "$started"
}

if [ "${1:-}" = --inside ]; then
    inside "$2" "$3"
    exit 0
fi

# Passes its input on and shows it on stderr (through the inherited descriptor: tee /dev/stderr would reopen
# a redirected stderr file and write over it).
show() {
    local line
    while IFS= read -r line; do
        printf '%s\n' "$line" >&2
        printf '%s\n' "$line"
    done
}

versions=("$@")
[ ${#versions[@]} -gt 0 ] || versions=(15 17 18)
results=$(mktemp)
trap 'rm -f "$results"' EXIT
for version in "${versions[@]}"; do
    log "libpqxx of PostgreSQL $version's Debian"
    case $version in
        15) PG_MAJOR=15 bash "$0" --inside 15 "$ROOT/build-client-matrix" | show |
                sed -n "s/^RESULT/$version/p" >>"$results" ;;
        17 | 18)
            "$ROOT/scripts/matrix_root.sh" make "$version"
            dir=$("$ROOT/scripts/matrix_root.sh" path "$version")/build/pg_ratelimit-client
            as_root rm -rf "$dir/tree"
            as_root mkdir -p "$dir/tree"
            # Tracked and untracked files, not the ignored ones (builds); tar keeps their times, so that the
            # build stays incremental.
            (cd "$ROOT" && git ls-files -z --cached --others --exclude-standard | tar --null -T - -cf -) |
                as_root tar -xf - -C "$dir/tree"
            "$ROOT/scripts/matrix_root.sh" run "$version" \
                "PG_MAJOR=$version bash /build/pg_ratelimit-client/tree/scripts/client_matrix.sh --inside $version /build/pg_ratelimit-client/build" |
                show | sed -n "s/^RESULT/$version/p" >>"$results"
            ;;
        *) die "no libpqxx for PostgreSQL $version here (15: the host's, 17 and 18: the roots')" ;;
    esac
done

echo
printf '%-4s %-8s %-7s %6s  %s\n' PG step status secs detail
awk '{ printf "%-4s %-8s %-7s %6s  %s\n", $1, $2, $3, $4, $5 }' "$results"
! grep -q ' FAILED ' "$results"
