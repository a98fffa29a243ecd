#!/usr/bin/env bash
# Fuzzes the pure algorithm core (extension/core/) with libFuzzer: builds test/fuzz (clang-14, with
# AddressSanitizer and UndefinedBehaviorSanitizer) into build/fuzz, runs it for a bounded time on a copy
# of the seed corpus test/fuzz/corpus (the tree is never written), and fails on any crash, sanitizer
# report or invariant violation. The last line is "cases: N", the executions libFuzzer reports.
#
# Usage: scripts/fuzz.sh [SECONDS]       (default: $PG_RATELIMIT_FUZZ_SECONDS, else 60)
# A failing input is kept in build/fuzz/artifacts/; replay it, printing every operation, with
#   PG_RATELIMIT_FUZZ_TRACE=1 build/fuzz/core_fuzzer build/fuzz/artifacts/crash-<sha1>
set -euo pipefail
source "$(dirname "$0")/common.sh"

seconds=${1:-${PG_RATELIMIT_FUZZ_SECONDS:-60}}
[[ $seconds =~ ^[1-9][0-9]*$ ]] || die "the fuzzing time must be a whole number of seconds, not '$seconds'"

ensure_packages clang-14 libclang-rt-14-dev cmake
BUILD=$ROOT/build/fuzz
log "building the core fuzzer (clang-14, libFuzzer, ASan, UBSan)"
cmake -S "$ROOT/test/fuzz" -B "$BUILD" -DCMAKE_CXX_COMPILER=clang++-14 >/dev/null
cmake --build "$BUILD" -j2 >/dev/null

# libFuzzer adds the inputs it finds to the corpus directory it is given: give it a copy.
run_dir
corpus=$RUN_DIR/fuzz-corpus
mkdir -p "$corpus" "$BUILD/artifacts"
cp "$ROOT"/test/fuzz/corpus/* "$corpus/"
output=$BUILD/last-run.log

log "fuzzing the core for ${seconds} s ($(find "$corpus" -type f | wc -l) seed inputs)"
# -timeout: one input runs in microseconds; ten seconds means a hang. Every NEW/REDUCE line goes to the
# log only.
set +e
"$BUILD/core_fuzzer" -max_total_time="$seconds" -timeout=10 -max_len=1024 -print_final_stats=1 \
    -artifact_prefix="$BUILD/artifacts/" "$corpus" 2>&1 |
    tee "$output" | grep --line-buffered -vE '^#[0-9]+[[:space:]]+(NEW|REDUCE)'
status=${PIPESTATUS[0]}
set -e

executions=$(sed -n 's/^stat::number_of_executed_units: *\([0-9]*\).*/\1/p' "$output" | tail -n 1)
if [ "$status" -ne 0 ] || [ -z "$executions" ]; then
    printf '\nfuzz: FAILED (libFuzzer exit status %s); full output in %s\n' "$status" "$output" >&2
    artifact=$(sed -n "s/.*Test unit written to \(.*\)$/\1/p" "$output" | tail -n 1)
    [ -n "$artifact" ] && printf 'replay: PG_RATELIMIT_FUZZ_TRACE=1 %s %s\n' "$BUILD/core_fuzzer" "$artifact" >&2
    echo "cases: ${executions:-0}"
    exit 1
fi
echo "cases: $executions"
