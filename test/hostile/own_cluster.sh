# Sourced by review scripts that need a server of their own (settings run.sh's does not have, or state
# that cannot be undone without a restart, such as rate_limit_stats entries of dropped databases): the
# binaries on PATH, with the extension installed (test/hostile/run.sh provides them).
# own_cluster_start [server options...]: initdb and start with shared_preload_libraries = 'pg_ratelimit',
# export its libpq environment (and SERVER_LOG); the cluster is stopped and removed at exit.
# own_cluster_restart [command...]: a clean (fast) stop, the command run while the server is down, a start
# with the same options.
# shellcheck shell=bash
own_cluster_start() {
    OWN_AS_SERVER=()
    [ "$(id -u)" -eq 0 ] && OWN_AS_SERVER=(runuser -u postgres --)
    OWN_DIR=$(mktemp -d "${TMPDIR:-/tmp}/review_own.XXXXXX")
    chmod 755 "$OWN_DIR"
    [ "$(id -u)" -eq 0 ] && chown postgres: "$OWN_DIR"
    OWN_OPTIONS="$*"
    trap own_cluster_stop EXIT
    "${OWN_AS_SERVER[@]}" initdb -D "$OWN_DIR/data" -U postgres --auth=trust -E UTF8 --locale=C.UTF-8 \
        >"$OWN_DIR/initdb.log" 2>&1 || { cat "$OWN_DIR/initdb.log"; echo "initdb failed"; exit 2; }
    own_cluster_start_server
    export PGHOST=$OWN_DIR PGPORT=5432 PGUSER=postgres SERVER_LOG=$OWN_DIR/server.log
}
own_cluster_start_server() {
    "${OWN_AS_SERVER[@]}" pg_ctl -D "$OWN_DIR/data" -l "$OWN_DIR/server.log" -w -t 60 \
        -o "-c listen_addresses='' -c unix_socket_directories='$OWN_DIR' -p 5432 \
            -c shared_preload_libraries=pg_ratelimit -c pg_ratelimit.access_path=${ACCESS_PATH:-direct} $OWN_OPTIONS" \
        start >/dev/null || { tail "$OWN_DIR/server.log"; echo "server did not start"; exit 2; }
}
own_cluster_restart() {
    "${OWN_AS_SERVER[@]}" pg_ctl -D "$OWN_DIR/data" -m fast -w stop >/dev/null || exit 2
    [ $# -eq 0 ] || "$@"
    own_cluster_start_server
}
own_cluster_stop() {
    "${OWN_AS_SERVER[@]}" pg_ctl -D "$OWN_DIR/data" -m immediate -w stop >/dev/null 2>&1
    rm -rf "$OWN_DIR"
}
