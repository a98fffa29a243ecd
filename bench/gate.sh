#!/usr/bin/env bash
# pg_ratelimit_gate against nginx (BENCHMARKS.md, "The gateway"): wrk at 2 and 32 connections through
#   backend          the backend alone (nginx, one worker, `return 200`)
#   nginx_proxy      nginx (Debian's, 2 workers) as a plain reverse proxy to it
#   nginx_limit_req  the same with limit_req per user (its in-memory, per-instance limiter; never denying)
#   gate_nolimit     pg_ratelimit_gate with no limits
#   gate_memory      the gate with one memory limit per user
#   gate_durable     the gate with one durable limit per user
#   gate_example     the gate with the README example's limits: global (durable) + per user (memory)
# Every request carries a cookie username=u<1..10000> drawn at random (bench/gate_users.lua), so that the
# per-user limits see 10,000 keys; no limit ever denies (bursts of 10^9 per second): what is measured is
# what deciding costs. Every gate runs at once (idle ones cost nothing), 2 threads each (one per core);
# PostgreSQL on a unix socket with synchronous_commit off (as bench/run.sh's main figures); access logs off
# everywhere. The cells are interleaved in rounds and the median of the rounds reported, with the CPU time
# per request of the proxy and of PostgreSQL (bench/gate_measure.py).
#
#   bench/gate.sh [--duration SECONDS] [--rounds N] [--out DIR] [--no-profile]
#
# Writes DIR (default bench/results/gate)/results.md (the table and the targets), results.csv (every
# round), the wrk outputs, and with perf (linux-perf) a system-wide profile of gate_memory at 32
# connections (profile.txt).
set -euo pipefail
source "$(dirname "$0")/../scripts/common.sh"

DURATION=5
ROUNDS=3
OUT=$ROOT/bench/results/gate
PROFILE=true
while [ $# -gt 0 ]; do
    case "$1" in
        --duration) DURATION=$2; shift 2 ;;
        --rounds) ROUNDS=$2; shift 2 ;;
        --out) OUT=$2; shift 2 ;;
        --no-profile) PROFILE=false; shift ;;
        *) die "usage: $0 [--duration SECONDS] [--rounds N] [--out DIR] [--no-profile]" ;;
    esac
done

# nginx only here (Debian's package starts a server on port 80 where systemd runs: not for the test command).
ensure_packages "${PACKAGES[@]}" nginx
$PROFILE && ensure_packages linux-perf
build_and_install_extension
log "building pg_ratelimit_gate (Release) in build-gate-bench"
cmake -S "$ROOT" -B "$ROOT/build-gate-bench" -DCMAKE_BUILD_TYPE=Release -DPG_RATELIMIT_BUILD_GATE=ON \
    -DPG_RATELIMIT_BUILD_TESTS=OFF -DPG_RATELIMIT_BUILD_BENCH=OFF >/dev/null
cmake --build "$ROOT/build-gate-bench" -j2 --target pg_ratelimit_gate >/dev/null
GATE=$ROOT/build-gate-bench/gate/pg_ratelimit_gate
start_cluster -c shared_preload_libraries=pg_ratelimit -c synchronous_commit=off
psql -X -q -v ON_ERROR_STOP=1 -c "CREATE EXTENSION pg_ratelimit"

WORK=$RUN_DIR/gate-bench
mkdir -p "$WORK" "$OUT"
chmod 755 "$WORK"
PIDS=()
on_exit 'for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null; done; wait 2>/dev/null'

free_port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
BACKEND=$(free_port)
PROXY=$(free_port)
LIMITED=$(free_port)

# nginx NAME WORKERS SERVER-BLOCK: an nginx of its own in $WORK/NAME.
nginx_start() {
    local name=$1 workers=$2 server=$3 dir=$WORK/$1
    mkdir -p "$dir"
    local user=""
    [ "$(id -u)" -eq 0 ] && user="user root;"
    cat >"$dir/nginx.conf" <<CONF
$user
worker_processes $workers;
daemon off;
pid $dir/nginx.pid;
error_log $dir/error.log warn;
events { worker_connections 4096; }
http {
    access_log off;
    client_body_temp_path $dir/body;
    proxy_temp_path $dir/proxy;
    fastcgi_temp_path $dir/fastcgi;
    uwsgi_temp_path $dir/uwsgi;
    scgi_temp_path $dir/scgi;
    keepalive_requests 1000000;
    upstream backend { server 127.0.0.1:$BACKEND; keepalive 64; }
    $server
}
CONF
    nginx -c "$dir/nginx.conf" -p "$dir" &
    PIDS+=($!)
}
nginx_start backend 1 "server { listen 127.0.0.1:$BACKEND; location / { return 200 \"hello\\n\"; } }"
PROXY_LOCATION="proxy_pass http://backend; proxy_http_version 1.1; proxy_set_header Connection \"\";"
nginx_start proxy 2 "server { listen 127.0.0.1:$PROXY; location / { $PROXY_LOCATION } }"
nginx_start limit_req 2 "limit_req_zone \$cookie_username zone=users:10m rate=1000000000r/s;
    server { listen 127.0.0.1:$LIMITED; location / { limit_req zone=users burst=1000000000 nodelay; $PROXY_LOCATION } }"

cat >"$WORK/users.lua" <<'LUA'
-- A cookie username=u<1..10000> drawn at random per request.
request = function()
    return wrk.format(nil, nil, { ["Cookie"] = "username=u" .. math.random(1, 10000) })
end
LUA

# gate_config NAME LIMITS-YAML ROUTE-PLUGIN-YAML
gate_config() {
    cat >"$WORK/$1.yaml" <<YAML
gate:
  listen: 127.0.0.1:1
  admin_listen: off
  access_log: false
  threads: 2
$2
  urls:
  - pattern: '*'
    target: http://127.0.0.1:$BACKEND
$3
YAML
}
plugin() {
    cat <<YAML
  plugins:
  - id: ratelimit
    type: ratelimit
    parameters:
      limiter:
        type: pg_ratelimit
        conninfo: "host=$CLUSTER_DIR port=5432 user=postgres dbname=postgres"
        pool_size: 4
      limits:
$1
YAML
}
ENABLED="    plugins:
      ratelimit:
        enabled: true"
USER_LIMIT="      - key: username
        burst: 1000000000
        window: 1s
        request_field: \$.request.http.cookies['username']"
gate_config gate_nolimit "" ""
gate_config gate_memory "$(plugin "$USER_LIMIT
        storage: memory")" "$ENABLED"
gate_config gate_durable "$(plugin "$USER_LIMIT")" "$ENABLED"
gate_config gate_example "$(plugin "      - key: global
        burst: 1000000000
        window: 1s
$USER_LIMIT
        storage: memory")" "$ENABLED"

declare -A GATE_PORTS GATE_PIDS
for cell in gate_nolimit gate_memory gate_durable gate_example; do
    GATE_PORTS[$cell]=$(free_port)
    "$GATE" --config "$WORK/$cell.yaml" --listen "127.0.0.1:${GATE_PORTS[$cell]}" >"$WORK/$cell.log" 2>&1 &
    GATE_PIDS[$cell]=$!
    PIDS+=("${GATE_PIDS[$cell]}")
done
for cell in gate_nolimit gate_memory gate_durable gate_example; do
    for _ in $(seq 100); do
        curl -s -o /dev/null "http://127.0.0.1:${GATE_PORTS[$cell]}/" && break
        sleep 0.1
    done
    curl -s -o /dev/null "http://127.0.0.1:${GATE_PORTS[$cell]}/" || { cat "$WORK/$cell.log"; die "$cell did not start"; }
done
nginx_master() { cat "$WORK/$1/nginx.pid"; }
POSTMASTER=$(head -n 1 "$CLUSTER_DIR/data/postmaster.pid")

rm -f "$OUT"/wrk_*.txt
python3 "$ROOT/bench/gate_measure.py" --duration "$DURATION" --rounds "$ROUNDS" --out "$OUT" --lua "$WORK/users.lua" \
    --postmaster "$POSTMASTER" "backend=$BACKEND=$(nginx_master backend)" "nginx_proxy=$PROXY=$(nginx_master proxy)" \
    "nginx_limit_req=$LIMITED=$(nginx_master limit_req)" \
    "gate_nolimit=${GATE_PORTS[gate_nolimit]}=${GATE_PIDS[gate_nolimit]}" \
    "gate_memory=${GATE_PORTS[gate_memory]}=${GATE_PIDS[gate_memory]}" \
    "gate_durable=${GATE_PORTS[gate_durable]}=${GATE_PIDS[gate_durable]}" \
    "gate_example=${GATE_PORTS[gate_example]}=${GATE_PIDS[gate_example]}"

if $PROFILE; then
    log "profiling gate_memory at 32 connections (perf, every process, 8 s)"
    wrk -t2 -c32 -d12s -s "$WORK/users.lua" "http://127.0.0.1:${GATE_PORTS[gate_memory]}/hello" >/dev/null &
    load=$!
    sleep 2
    perf record -a -g -F 499 -o "$WORK/perf.data" -- sleep 8 >/dev/null 2>&1
    wait "$load"
    # head closes its pipe early: without this, perf's SIGPIPE (exit 141) ends the script under pipefail
    # after the first section.
    set +o pipefail
    {
        echo "## CPU by process (perf, every CPU, gate_memory at 32 connections)"
        perf report -i "$WORK/perf.data" --stdio --no-children --sort comm 2>/dev/null | grep -E '^ +[0-9]' | head -12
        echo
        echo "## pg_ratelimit_gate: where its CPU goes (self time, by shared object and symbol)"
        perf report -i "$WORK/perf.data" --stdio --no-children --comm pg_ratelimit_ga --sort dso,sym -g none \
            2>/dev/null | grep -E '^ +[0-9]' | head -30
        echo
        echo "## pg_ratelimit_gate by shared object"
        perf report -i "$WORK/perf.data" --stdio --no-children --comm pg_ratelimit_ga --sort dso -g none \
            2>/dev/null | grep -E '^ +[0-9]' | head -10
        echo
        echo "## postgres: where its CPU goes"
        perf report -i "$WORK/perf.data" --stdio --no-children --comm postgres --sort dso,sym -g none 2>/dev/null |
            grep -E '^ +[0-9]' | head -20
    } >"$OUT/profile.txt"
    set -o pipefail
    cat "$OUT/profile.txt"
fi
log "results in $OUT"
