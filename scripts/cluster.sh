#!/usr/bin/env bash
# A partitioned pg_ratelimit on one machine, for tests, demonstrations and the benchmark: N partitions
# (PostgreSQL 15 with the extension, each in DIR/pK) and one PL/Proxy proxy (DIR/proxy, with
# proxy/pg_ratelimit_proxy.sql and the SQL/MED server pg_ratelimit naming the partitions), on unix sockets
# in their directories, port 5432, no TCP. The private PostgreSQL they run is copied into DIR as well.
#   scripts/cluster.sh start N DIR     N = 1, 2, 4, 8...; prints the libpq settings of each server
#   scripts/cluster.sh stop DIR        stops every server of DIR (the directory stays: remove it after)
# Extra server options in CLUSTER_SERVER_OPTIONS (e.g. "-c synchronous_commit=off").
set -euo pipefail
source "$(dirname "$0")/common.sh"

usage() { die "usage: $0 start N DIR | stop DIR"; }

start() {
    local count=$1 dir=$2 k options conninfos=()
    [[ "$count" =~ ^[0-9]+$ ]] && [ "$count" -ge 1 ] && [ $((count & (count - 1))) -eq 0 ] ||
        die "the number of partitions must be a power of two (1, 2, 4, 8...): PL/Proxy routes by hash & (N - 1)"
    [ -e "$dir/proxy" ] && die "$dir already holds a cluster: stop it and remove the directory first"
    ensure_packages "${PACKAGES[@]}" "postgresql-$PG_MAJOR-plproxy"
    mkdir -p "$dir"
    RUN_DIR=$(cd "$dir" && pwd)   # common.sh's private PostgreSQL and clusters go here, and stay
    chmod 755 "$RUN_DIR"
    build_and_install_extension >/dev/null
    options="-c shared_preload_libraries=pg_ratelimit ${CLUSTER_SERVER_OPTIONS:-}"
    for ((k = 0; k < count; k++)); do
        cluster_init "p$k"
        # shellcheck disable=SC2086
        cluster_start "p$k" $options
        psql -X -q -v ON_ERROR_STOP=1 -h "$(cluster_dir "p$k")" -p 5432 -U postgres -d postgres \
            -c 'CREATE EXTENSION pg_ratelimit' >/dev/null
        conninfos+=("p$k 'host=$(cluster_dir "p$k") port=5432 dbname=postgres'")
    done
    cluster_init proxy
    # shellcheck disable=SC2086
    cluster_start proxy ${CLUSTER_SERVER_OPTIONS:-}
    local proxy_psql=(psql -X -q -v ON_ERROR_STOP=1 -h "$(cluster_dir proxy)" -p 5432 -U postgres -d postgres)
    "${proxy_psql[@]}" -f "$ROOT/proxy/pg_ratelimit_proxy.sql" >/dev/null
    "${proxy_psql[@]}" -c "CREATE SERVER pg_ratelimit FOREIGN DATA WRAPPER plproxy OPTIONS ($(IFS=,; echo "${conninfos[*]}"))" \
        -c "CREATE USER MAPPING FOR PUBLIC SERVER pg_ratelimit OPTIONS (user 'postgres')" >/dev/null
    echo "PG_BIN=$PG_BIN"
    echo "proxy: host=$(cluster_dir proxy) port=5432 user=postgres dbname=postgres"
    for ((k = 0; k < count; k++)); do echo "partition $k: host=$(cluster_dir "p$k") port=5432 user=postgres dbname=postgres"; done
}

stop() {
    local dir=$1 name
    [ -d "$dir" ] || return 0
    RUN_DIR=$(cd "$dir" && pwd)
    PG_BIN=$RUN_DIR/postgresql/usr/lib/postgresql/$PG_MAJOR/bin
    [ -x "$PG_BIN/pg_ctl" ] || PG_BIN=$PG_SYSTEM_BIN
    for name in "$RUN_DIR"/proxy "$RUN_DIR"/p[0-9]*; do
        [ -d "$name/data" ] && cluster_stop "$(basename "$name")"
    done
    return 0
}

case "${1:-}" in
    start) [ $# -eq 3 ] || usage; start "$2" "$3" ;;
    stop) [ $# -eq 2 ] || usage; stop "$2" ;;
    *) usage ;;
esac
