# Shared by scripts/demo.sh and scripts/test.sh: packages, build and install, and a throwaway
# PostgreSQL 15 cluster. Works as root (the server then runs as the postgres user) and as a normal user
# (sudo is used for apt and for installing into the server's directories).
# shellcheck shell=bash

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
PG_BIN=/usr/lib/postgresql/15/bin
export PG_CONFIG=$PG_BIN/pg_config

# What the build, the tests, the demonstration and the benchmarks need on Debian 12.
PACKAGES=(build-essential cmake pkg-config git
          postgresql-15 postgresql-server-dev-15 postgresql-client-15
          libpqxx-dev libgtest-dev libgmock-dev libbenchmark-dev)

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
    as_root apt-get update -qq
    as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
}

# Builds the extension as the calling user and installs it into PostgreSQL 15's directories.
build_and_install_extension() {
    log "building the extension"
    make -C "$ROOT" -s -j2
    log "installing the extension into $($PG_CONFIG --pkglibdir)"
    as_root make -C "$ROOT" -s install >/dev/null
}

# Starts a private cluster: data and unix socket in a fresh temporary directory, no TCP listener, so it
# can never collide with another server. Exports PGHOST, PGPORT, PGUSER and PGDATABASE for libpq, and
# stops and removes the cluster when the calling script exits.
CLUSTER_DIR=
start_cluster() {
    CLUSTER_DIR=$(mktemp -d "${TMPDIR:-/tmp}/pg_ratelimit.XXXXXX")
    chmod 755 "$CLUSTER_DIR"
    local run_as=()
    if [ "$(id -u)" -eq 0 ]; then
        chown postgres: "$CLUSTER_DIR"
        run_as=(runuser -u postgres --)
    fi
    RUN_AS_SERVER=("${run_as[@]}")
    trap stop_cluster EXIT
    log "starting a throwaway PostgreSQL 15 cluster in $CLUSTER_DIR"
    "${run_as[@]}" "$PG_BIN/initdb" -D "$CLUSTER_DIR/data" -U postgres --auth=trust -E UTF8 --locale=C.UTF-8 \
        >"$CLUSTER_DIR/initdb.log" 2>&1 || { cat "$CLUSTER_DIR/initdb.log"; die "initdb failed"; }
    "${run_as[@]}" "$PG_BIN/pg_ctl" -D "$CLUSTER_DIR/data" -l "$CLUSTER_DIR/server.log" -w \
        -o "-c listen_addresses='' -c unix_socket_directories='$CLUSTER_DIR' -p 5432 $*" start >/dev/null \
        || { cat "$CLUSTER_DIR/server.log"; die "the server did not start"; }
    export PGHOST=$CLUSTER_DIR PGPORT=5432 PGUSER=postgres PGDATABASE=postgres
}

stop_cluster() {
    [ -n "$CLUSTER_DIR" ] && [ -d "$CLUSTER_DIR/data" ] || return 0
    "${RUN_AS_SERVER[@]}" "$PG_BIN/pg_ctl" -D "$CLUSTER_DIR/data" -m fast -w stop >/dev/null 2>&1 || true
    rm -rf "$CLUSTER_DIR"
    CLUSTER_DIR=
}
