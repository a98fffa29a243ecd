# Shared by the scripts: packages, a private PostgreSQL installation (15, Debian 12's, unless PG_MAJOR
# names another installed under /usr/lib/postgresql: the version matrix runs these scripts in Debian roots
# of PostgreSQL 17 and 18, scripts/matrix.sh), build and install, and throwaway clusters. Works as root (servers then run as the postgres user) and as a normal user (sudo is
# used for apt only).
#
# The extension is never installed into the system's PostgreSQL: each run copies Debian's PostgreSQL 15
# (binaries, libraries, share files: about 50 MB) into a temporary directory and installs the extension
# there. PostgreSQL installations are relocatable (pg_config, postgres and pg_regress find their share and
# library directories relative to the binary), so that copy is a complete PostgreSQL 15 of its own. Two
# runs (two checkouts, an AddressSanitizer build beside a normal one) never overwrite each other's
# pg_ratelimit.so, and installing needs no root.
# shellcheck shell=bash

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
PG_MAJOR=${PG_MAJOR:-15}
PG_SYSTEM_BIN=/usr/lib/postgresql/$PG_MAJOR/bin
# Until private_postgres runs: the system's (lint and the client build need only its headers).
PG_BIN=$PG_SYSTEM_BIN
export PG_CONFIG=$PG_BIN/pg_config

# What the build, the tests, the demonstration and the benchmarks need on Debian 12.
PACKAGES=(build-essential cmake pkg-config git
          "postgresql-$PG_MAJOR" "postgresql-server-dev-$PG_MAJOR" "postgresql-client-$PG_MAJOR"
          libpqxx-dev libgtest-dev libgmock-dev)
# pg_ratelimit_gate (gate/, docs/gate.md): Boost.Asio/Beast (header-only in 1.74, Boost.System too), yaml-cpp,
# CLI11, OpenSSL, nlohmann-json; its tests drive it with curl, wrk, Python 3 and openssl. (nginx, which only
# bench/gate.sh needs, is installed by that script: Debian's package starts a server on port 80.)
# PL/Proxy, for the partitioned setups (scripts/cluster.sh). Both on the host's PostgreSQL only: the version
# matrix's roots (17, 18) build and test neither, and install only what scripts/matrix_root.sh lists.
if [ "$PG_MAJOR" = 15 ]; then
    PACKAGES+=(libboost-dev libyaml-cpp-dev libcli11-dev libssl-dev nlohmann-json3-dev libpq-dev
               curl wrk python3 openssl postgresql-15-plproxy)
fi

log() { printf '\033[1m== %s\033[0m\n' "$*" >&2; }
die() { printf 'error: %s\n' "$*" >&2; exit 1; }

as_root() {
    if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi
}

# Installs whichever of the given Debian packages are missing.
ensure_packages() {
    local missing=() pkg
    for pkg in "$@"; do
        dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q 'install ok installed' || missing+=("$pkg")
    done
    [ ${#missing[@]} -eq 0 ] && return 0
    log "installing ${missing[*]}"
    # An archive whose Release file is past its Valid-Until date (Debian sid's, in the version matrix)
    # still serves its packages.
    as_root apt-get update -qq -o Acquire::Check-Valid-Until=false
    as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
}

# --- the run directory: the private PostgreSQL and every cluster of this run, removed at exit -----------

RUN_DIR=
KEEP_RUN_DIR=false
EXIT_HOOKS=()
on_exit() { EXIT_HOOKS+=("$1"); }
finish_run() {
    local hook
    for hook in "${EXIT_HOOKS[@]}"; do eval "$hook" || true; done
    stop_all_clusters
    if [ -n "$RUN_DIR" ] && ! $KEEP_RUN_DIR; then rm -rf "$RUN_DIR"; fi
}
run_dir() {
    [ -n "$RUN_DIR" ] && return 0
    RUN_DIR=$(mktemp -d "${TMPDIR:-/tmp}/pg_ratelimit.XXXXXX")
    chmod 755 "$RUN_DIR"   # the server runs as postgres when we are root
    trap finish_run EXIT
}

# Copies Debian's PostgreSQL $PG_MAJOR into the run directory and points PG_BIN, PG_CONFIG and PATH at the copy.
private_postgres() {
    [ "$PG_BIN" != "$PG_SYSTEM_BIN" ] && return 0
    run_dir
    local root=$RUN_DIR/postgresql
    mkdir -p "$root/usr/lib/postgresql" "$root/usr/share/postgresql" "$root/usr/include"
    cp -a "/usr/lib/postgresql/$PG_MAJOR" "$root/usr/lib/postgresql/"
    cp -a "/usr/share/postgresql/$PG_MAJOR" "$root/usr/share/postgresql/"
    ln -s /usr/include/postgresql "$root/usr/include/postgresql"   # headers are only read
    PG_BIN=$root/usr/lib/postgresql/$PG_MAJOR/bin
    export PG_CONFIG=$PG_BIN/pg_config
    export PATH=$PG_BIN:$PATH
}

# Builds the extension as the calling user and installs it into the private PostgreSQL. Extra arguments go
# to make (variables given there replace the Makefile's own: pass extra compiler flags in the environment
# instead, as test/sanitized_backend.sh does). PG_CONFIG is passed on the command line: an exported
# variable would not survive sudo, and a Makefile default would pick whichever pg_config is on PATH.
build_and_install_extension() {
    private_postgres
    log "building the extension"
    make -C "$ROOT" -s -j2 PG_CONFIG="$PG_CONFIG" "$@"
    log "installing the extension into $($PG_CONFIG --pkglibdir)"
    make -C "$ROOT" -s install PG_CONFIG="$PG_CONFIG" "$@" >/dev/null
}

# --- clusters -------------------------------------------------------------------------------------------
# A cluster NAME lives in $RUN_DIR/NAME: data in data/, its unix socket in the directory itself, the log
# in server.log; no TCP listener, so it can never collide with another server.

RUN_AS_SERVER=()
[ "$(id -u)" -eq 0 ] && RUN_AS_SERVER=(runuser -u postgres --)
CLUSTERS=()

cluster_dir() { echo "$RUN_DIR/$1"; }

# cluster_init NAME [initdb options...]
cluster_init() {
    local name=$1 dir
    shift
    run_dir
    dir=$(cluster_dir "$name")
    mkdir -p "$dir"
    chmod 755 "$dir"
    [ "$(id -u)" -eq 0 ] && chown postgres: "$dir"
    "${RUN_AS_SERVER[@]}" "$PG_BIN/initdb" -D "$dir/data" -U postgres --auth=trust -E UTF8 --locale=C.UTF-8 "$@" \
        >"$dir/initdb.log" 2>&1 || { cat "$dir/initdb.log"; die "initdb failed for cluster $name"; }
}

# cluster_start NAME [server options...]: starts (or restarts after a crash) and waits until it accepts
# connections.
cluster_start() {
    local name=$1 dir
    shift
    dir=$(cluster_dir "$name")
    "${RUN_AS_SERVER[@]}" "$PG_BIN/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 120 -c \
        -o "-c listen_addresses='' -c unix_socket_directories='$dir' -p 5432 $*" start >/dev/null \
        || { tail -n 50 "$dir/server.log"; die "cluster $name did not start"; }
    [[ " ${CLUSTERS[*]} " == *" $name "* ]] || CLUSTERS+=("$name")
}

# cluster_stop NAME [fast|smart|immediate]. A PostgreSQL 15 postmaster asked for a fast shutdown while it
# is still recovering from a backend's crash can hang for good: wait (up to a minute) until it accepts
# connections again first, and stop it immediately if a stop does not finish.
cluster_stop() {
    local dir
    dir=$(cluster_dir "$1")
    [ -f "$dir/data/postmaster.pid" ] || return 0
    if [ "${2:-fast}" != immediate ]; then
        "$PG_BIN/pg_isready" -q -h "$dir" -p 5432 -t 60 >/dev/null 2>&1 || true
    fi
    "${RUN_AS_SERVER[@]}" "$PG_BIN/pg_ctl" -D "$dir/data" -m "${2:-fast}" -w -t 60 stop >/dev/null 2>&1 ||
        "${RUN_AS_SERVER[@]}" "$PG_BIN/pg_ctl" -D "$dir/data" -m immediate -w stop >/dev/null 2>&1 || true
}

# The postmaster's pid (for kill -9 in the crash test).
cluster_pid() { head -n 1 "$(cluster_dir "$1")/data/postmaster.pid"; }

# Exports the libpq environment of cluster NAME, so that psql, the tests and pg_dump use it.
use_cluster() {
    export PGHOST=$(cluster_dir "$1") PGPORT=5432 PGUSER=postgres PGDATABASE=postgres
}

stop_all_clusters() {
    local name
    for name in "${CLUSTERS[@]}"; do cluster_stop "$name"; done
    CLUSTERS=()
}

# The main cluster of a script ("main"), with extra server options; exports its libpq environment.
# CLUSTER_DIR is its directory. A second start_cluster (after stop_cluster) starts a fresh one.
CLUSTER_DIR=
start_cluster() {
    private_postgres
    if [ -n "$CLUSTER_DIR" ]; then cluster_stop main; rm -rf "$CLUSTER_DIR"; fi
    cluster_init main
    CLUSTER_DIR=$(cluster_dir main)
    log "starting a throwaway PostgreSQL $PG_MAJOR cluster in $CLUSTER_DIR"
    cluster_start main "$@"
    use_cluster main
}

stop_cluster() { [ -n "$CLUSTER_DIR" ] && cluster_stop main; }
