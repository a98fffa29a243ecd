#!/usr/bin/env bash
# The main job: installs what is missing, builds and installs pg_ratelimit, starts a private throwaway
# PostgreSQL 15 cluster, installs the extension into it and demonstrates it. Stops the cluster at the
# end, unless --keep is given: then the server stays up and the script prints how to connect.
set -euo pipefail
source "$(dirname "$0")/common.sh"

keep=false
case "${1:-}" in
--keep) keep=true ;;
"") ;;
*) die "usage: $0 [--keep]" ;;
esac

ensure_packages "${PACKAGES[@]}"
build_and_install_extension
log "building the C++ client library and its example (CMake)"
cmake -S "$ROOT" -B "$ROOT/build" -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build "$ROOT/build" -j2 --target pg_ratelimit_example >/dev/null
start_cluster -c shared_preload_libraries=pg_ratelimit  # memory limits need the library preloaded
log "CREATE EXTENSION pg_ratelimit"
psql -X -q -v ON_ERROR_STOP=1 -c "CREATE EXTENSION pg_ratelimit"
log "first call: SELECT * FROM rate_limit_request('user1')  (the shipped 'default' limit: 120 per minute)"
psql -X -v ON_ERROR_STOP=1 -c "SELECT * FROM rate_limit_request('user1')"
psql -X -v ON_ERROR_STOP=1 -f "$ROOT/scripts/demo.sql"

log "8 concurrent connections, 50 requests each, on one key with an allowance of 100"
psql -X -q -v ON_ERROR_STOP=1 -c "SELECT rate_limit_define('demo_hot', rate => 100, period => '1 day')" >/dev/null
out=$(mktemp -d)
for connection in 1 2 3 4 5 6 7 8; do
    # Each line is its own statement and transaction (autocommit), so the 8 sessions truly interleave.
    for _ in $(seq 50); do echo "SELECT allowed FROM rate_limit_request('hot', 'demo_hot');"; done |
        psql -X -At -v ON_ERROR_STOP=1 >"$out/$connection" &
done
wait
admitted=$(cat "$out"/* | grep -c '^t$' || true)
attempts=$(cat "$out"/* | wc -l)
rm -rf "$out"
echo "attempts: $attempts, admitted: $admitted (allowance: 100)"
[ "$admitted" -eq 100 ] || die "admitted $admitted, expected exactly 100"

log "the C++ client library: client/examples/example.cpp"
"$ROOT/build/client/pg_ratelimit_example"

if $keep; then
    KEEP_RUN_DIR=true
    CLUSTERS=()   # leave it running
    log "the server keeps running"
    cat <<MSG
Connect:  psql -h $PGHOST -p $PGPORT -U $PGUSER $PGDATABASE
Stop:     ${RUN_AS_SERVER[*]:+${RUN_AS_SERVER[*]} }$PG_BIN/pg_ctl -D $CLUSTER_DIR/data stop && rm -rf $RUN_DIR
MSG
else
    stop_cluster
    log "done; the throwaway cluster is stopped and removed"
fi
