#!/usr/bin/env bash
# pg_ratelimit_gate with real processes on loopback: a private PostgreSQL with the extension (a cluster of
# its own, library preloaded for memory limits), the backend and map endpoint (test/gate/backend.py), one,
# two and three gates, curl, wrk and raw sockets. test/gate/gate_test.py holds the checks (listed there);
# each prints "ok: ..." or "FAILED: ..."; the run ends with "cases: N" and its time, and exits non-zero if
# any check failed.
#
#   test/gate/gate_test.sh [GATE_BINARY]
#
# GATE_BINARY defaults to build/gate/pg_ratelimit_gate (the CMake build with -DPG_RATELIMIT_BUILD_GATE=ON);
# without one the script builds it in the run directory.
set -euo pipefail
# shellcheck source-path=SCRIPTDIR source=../../scripts/common.sh
source "$(dirname "$0")/../../scripts/common.sh"

STARTED=$(date +%s)
GATE=${1:-}
ensure_packages "${PACKAGES[@]}"
if [ -z "$GATE" ] && [ -x "$ROOT/build/gate/pg_ratelimit_gate" ]; then
    GATE=$ROOT/build/gate/pg_ratelimit_gate
elif [ -z "$GATE" ]; then
    run_dir
    log "building pg_ratelimit_gate in $RUN_DIR/gate-build"
    cmake -S "$ROOT" -B "$RUN_DIR/gate-build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DPG_RATELIMIT_BUILD_GATE=ON \
        -DPG_RATELIMIT_BUILD_TESTS=OFF -DPG_RATELIMIT_BUILD_BENCH=OFF >/dev/null
    cmake --build "$RUN_DIR/gate-build" -j2 --target pg_ratelimit_gate >/dev/null
    GATE=$RUN_DIR/gate-build/gate/pg_ratelimit_gate
fi
[ -x "$GATE" ] || die "no gate binary at $GATE"

# shellcheck disable=SC2119  # no extra make arguments
build_and_install_extension
cluster_init gate
PG_OPTIONS="-c listen_addresses='' -c unix_socket_directories='$(cluster_dir gate)' -p 5432 -c shared_preload_libraries=pg_ratelimit"
cluster_start gate -c shared_preload_libraries=pg_ratelimit
use_cluster gate
psql -X -q -v ON_ERROR_STOP=1 -c "CREATE EXTENSION pg_ratelimit"

WORK=$RUN_DIR/gate-work
mkdir -p "$WORK"
chmod 755 "$WORK"
status=0
GATE_BIN=$GATE GATE_WORK=$WORK GATE_PG_BIN=$PG_BIN GATE_PG_DATA="$(cluster_dir gate)/data" \
    GATE_PG_LOG="$(cluster_dir gate)/server.log" GATE_PG_OPTIONS="$PG_OPTIONS" GATE_RUN_AS="${RUN_AS_SERVER[*]}" \
    python3 "$ROOT/test/gate/gate_test.py" || status=$?
echo "gate integration tests: $(($(date +%s) - STARTED)) s"
exit $status
