#!/usr/bin/env bash
# The main job: installs what is missing, builds and installs pg_ratelimit, starts a private throwaway
# PostgreSQL 15 cluster, installs the extension into it and demonstrates it. Stops the cluster at the
# end, unless --keep is given: then the server stays up and the script prints how to connect.
#
# --gate also builds pg_ratelimit_gate (docs/gate.md), starts a backend (test/gate/backend.py) and the gate
# with the seed article's example configuration (gate/examples/seed.yaml, its conninfo pointed at the
# throwaway server), shows an allowed request, throttling and 429 answers with curl, then stops the gate
# and the backend (with --keep too: only the PostgreSQL server is kept).
set -euo pipefail
source "$(dirname "$0")/common.sh"

keep=false
gate=false
for arg in "$@"; do
    case "$arg" in
    --keep) keep=true ;;
    --gate) gate=true ;;
    *) die "usage: $0 [--keep] [--gate]" ;;
    esac
done

ensure_packages "${PACKAGES[@]}"
build_and_install_extension
log "building the C++ client library and its example (CMake)"
if $gate; then
    cmake -S "$ROOT" -B "$ROOT/build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DPG_RATELIMIT_BUILD_GATE=ON >/dev/null
    log "building pg_ratelimit_gate (a few minutes the first time)"
    cmake --build "$ROOT/build" -j2 --target pg_ratelimit_example pg_ratelimit_gate >/dev/null
else
    cmake -S "$ROOT" -B "$ROOT/build" -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
    cmake --build "$ROOT/build" -j2 --target pg_ratelimit_example >/dev/null
fi
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

# --- the gate ---------------------------------------------------------------------------------------------
# Prints a command, then runs it.
show() {
    printf '\n$ %s\n' "$*"
    "$@"
}
# The port if nothing listens on it, else a free one.
port_or_free() {
    python3 - "$1" <<'PY'
import socket, sys
s = socket.socket()
try:
    s.bind(("127.0.0.1", int(sys.argv[1])))
except OSError:
    s.bind(("127.0.0.1", 0))
print(s.getsockname()[1])
PY
}
wait_http() {  # URL: until it answers (10 s at most)
    local i
    for i in $(seq 100); do
        curl -s -o /dev/null "$1" && return 0
        sleep 0.1
    done
    die "nothing answers at $1"
}

if $gate; then
    GATE_DIR=$RUN_DIR/gate
    mkdir -p "$GATE_DIR"
    backend_port=$(port_or_free 8000)
    gate_port=$(port_or_free 8080)
    admin_port=$(port_or_free 8081)
    # The seed's example, with the conninfo of this throwaway server (and other ports if 8000, 8080 or 8081 are
    # taken on this machine).
    sed -e "s|conninfo: .*|conninfo: \"host=$PGHOST port=$PGPORT user=$PGUSER dbname=$PGDATABASE\"|" \
        -e "s|127.0.0.1:8000|127.0.0.1:$backend_port|" -e "s|127.0.0.1:8080|127.0.0.1:$gate_port|" \
        -e "s|127.0.0.1:8081|127.0.0.1:$admin_port|" "$ROOT/gate/examples/seed.yaml" >"$GATE_DIR/gate.yaml"
    GATE_PIDS=()
    on_exit 'for p in "${GATE_PIDS[@]}"; do kill "$p" 2>/dev/null; done; wait 2>/dev/null'
    log "the gate: a backend on 127.0.0.1:$backend_port, pg_ratelimit_gate on 127.0.0.1:$gate_port (admin $admin_port)"
    python3 "$ROOT/test/gate/backend.py" "$backend_port" >"$GATE_DIR/backend.log" 2>&1 &
    GATE_PIDS+=($!)
    "$ROOT/build/gate/pg_ratelimit_gate" --config "$GATE_DIR/gate.yaml" >"$GATE_DIR/access.log" 2>"$GATE_DIR/gate.log" &
    GATE_PIDS+=($!)
    wait_http "http://127.0.0.1:$backend_port/"
    wait_http "http://127.0.0.1:$admin_port/healthz"
    sed -n '/^gate:/,$p' "$GATE_DIR/gate.yaml"
    cat "$GATE_DIR/gate.log"

    log "the gate defined its limits in the database, as gate_<key>"
    psql -X -v ON_ERROR_STOP=1 -c "SELECT name, algorithm, rate, period, capacity, max_reserved, storage
                                   FROM rate_limit_config WHERE name LIKE 'gate%' ORDER BY name"

    log "an allowed request: the backend's answer plus RateLimit-Policy and RateLimit (global and username)"
    show curl -s -i --cookie username=alice "http://127.0.0.1:$gate_port/hello"
    echo
    log "without the cookie the username limit is skipped (on_missing: skip): only the global limit applies"
    show curl -s -o /dev/null -D - "http://127.0.0.1:$gate_port/hello"

    log "700 requests from bob at once (50 in parallel): the burst of 600 (and what refills meanwhile, one per 0.1 s) passes at once, the next are delayed up to max_throttle (3s), the rest get 429"
    mkdir -p "$GATE_DIR/burst"
    args=()
    for i in $(seq 700); do
        args+=(-o "$GATE_DIR/burst/$i.out" "http://127.0.0.1:$gate_port/hello")
    done
    logged=$(wc -l <"$GATE_DIR/access.log")
    started=$(date +%s.%N)
    printf '\n$ curl -s -i --parallel --parallel-max 50 --cookie username=bob -o N.out http://127.0.0.1:%s/hello ... (x700)\n' \
        "$gate_port"
    curl -s -i --parallel --parallel-max 50 --cookie username=bob "${args[@]}" 2>/dev/null
    # What the gate decided for each of them, from its access log.
    cat >"$GATE_DIR/summary.py" <<'PY'
import re, sys, time
rows = [dict(re.findall(r"(\w+)=(\S+)", line)) for line in sys.stdin]
def by(decision):
    return [r for r in rows if r.get("decision") == decision]
waits = [float(r["throttled_ms"]) / 1000 for r in by("throttled")]
print(f"{len(rows)} requests in {time.time() - float(sys.argv[1]):.1f} s: {len(by('allowed'))} allowed at once, "
      f"{len(waits)} throttled (answered 200 after {min(waits, default=0):.2f} to {max(waits, default=0):.2f} s), "
      f"{len(by('denied'))} denied (429)")
PY
    tail -n +"$((logged + 1))" "$GATE_DIR/access.log" | python3 "$GATE_DIR/summary.py" "$started"
    denied=$(grep -l '^HTTP/1.1 429' "$GATE_DIR"/burst/*.out | head -n 1 || true)
    [ -n "$denied" ] || die "no request of the burst was denied"
    log "one of the 429 answers ($(basename "$denied"))"
    cat "$denied"
    log "alice is not affected"
    show curl -s -o /dev/null -D - --cookie username=alice "http://127.0.0.1:$gate_port/hello"
    log "the access log (stdout), last lines"
    tail -n 3 "$GATE_DIR/access.log"
    log "/metrics on the admin port (excerpt)"
    curl -s "http://127.0.0.1:$admin_port/metrics" | grep -E '^pg_ratelimit_gate_(decisions_total|limit_decisions_total)' | grep -v ' 0$' || true
    for p in "${GATE_PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
    wait "${GATE_PIDS[@]}" 2>/dev/null || true
    GATE_PIDS=()
    log "the gate and the backend are stopped"
fi

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
