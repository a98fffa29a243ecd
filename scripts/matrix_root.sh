#!/usr/bin/env bash
# A Debian root per PostgreSQL version, for the version matrix (scripts/matrix.sh): made with debootstrap
# from Debian's archive, with PostgreSQL N, its server headers and the build dependencies installed inside,
# and kept between runs in a cache outside the clone (PG_RATELIMIT_ROOTS, default
# /var/cache/pg_ratelimit/roots), reused when complete. No Docker daemon is needed: the roots are entered
# with chroot, with /proc, /sys, /dev, /dev/pts and /dev/shm mounted while a command runs (always
# gone after, in a mount namespace of their own). Needs root (sudo is used when the caller is not).
#
#   scripts/matrix_root.sh path VERSION        the root's directory
#   scripts/matrix_root.sh make VERSION        makes it unless it is complete (a stamp file says so)
#   scripts/matrix_root.sh run VERSION CMD...  runs CMD in the root (bash -c), the clone bind-mounted at /src
#   scripts/matrix_root.sh copy VERSION        copies the clone's files (tracked and untracked, not ignored)
#                                              to /build/pg_ratelimit in the root, where the matrix builds
#
# VERSION: 17 (Debian trixie) or 18 (Debian sid, whose index may be past its Valid-Until date).
set -euo pipefail
source "$(dirname "$0")/common.sh"

ROOTS=${PG_RATELIMIT_ROOTS:-/var/cache/pg_ratelimit/roots}
# What the matrix builds and runs inside a root (as scripts/common.sh's PACKAGES on the host).
root_packages() {
    echo "postgresql-$1 postgresql-server-dev-$1 postgresql-client-$1 build-essential cmake pkg-config git"
    echo "libpqxx-dev libgtest-dev libgmock-dev ca-certificates locales-all procps"
    echo "debhelper postgresql-server-dev-all"
}

suite_of() {
    case "$1" in
        17) echo trixie ;;
        18) echo sid ;;
        *) die "no Debian suite for PostgreSQL $1 here (17: trixie, 18: sid; 15 is the host's)" ;;
    esac
}

root_dir() { echo "$ROOTS/pg$1"; }

# in_root ROOT CMD: bash -c CMD inside ROOT, with /proc, /sys, /dev, /dev/pts, /dev/shm and the clone (at
# /src) mounted in a mount namespace of the command's own: nobody else sees them, two commands in one root
# never disturb each other's, and they go when the command ends, however it ends.
in_root() {
    local root=$1
    shift
    # shellcheck disable=SC2016
    as_root unshare --mount --propagation private /bin/bash -c '
        set -e
        root=$1 src=$2
        shift 2
        for point in proc sys dev dev/pts dev/shm; do mkdir -p "$root/$point"; mount --bind "/$point" "$root/$point"; done
        mkdir -p "$root/src"
        mount --bind "$src" "$root/src"
        exec chroot "$root" /usr/bin/env -i PATH=/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin HOME=/root LANG=C.UTF-8 \
            bash -c "$*"' in_root "$root" "$ROOT" "$@"
}

make_root() {
    local version=$1 suite root started packages
    suite=$(suite_of "$version")
    root=$(root_dir "$version")
    packages=$(root_packages "$version" | tr '\n' ' ')
    if [ -f "$root/.pg_ratelimit-root-complete" ]; then
        # A root made for another list of packages (an older checkout's) gets what it lacks.
        if [ "$(cat "$root/.pg_ratelimit-root-complete")" != "$packages" ]; then
            log "PostgreSQL $version root: cached in $root; installing the packages it lacks"
            # shellcheck disable=SC2086
            in_root "$root" "apt-get -o Acquire::Check-Valid-Until=false update -qq &&
                DEBIAN_FRONTEND=noninteractive apt-get -o Acquire::Check-Valid-Until=false install -y -qq \
                    --no-install-recommends $packages >/dev/null" || die "installing packages in the $suite root failed"
            echo "$packages" | as_root tee "$root/.pg_ratelimit-root-complete" >/dev/null
        fi
        log "PostgreSQL $version root: cached in $root"
        return 0
    fi
    ensure_packages debootstrap
    started=$(date +%s)
    log "PostgreSQL $version root: debootstrap $suite into $root"
    as_root rm -rf "$root"
    as_root mkdir -p "$root"
    as_root debootstrap --variant=minbase "$suite" "$root" http://deb.debian.org/debian >"$ROOTS/pg$version.debootstrap.log" 2>&1 ||
        { tail -n 20 "$ROOTS/pg$version.debootstrap.log"; die "debootstrap of $suite failed: the matrix needs Debian's archive"; }
    log "PostgreSQL $version root: installing PostgreSQL $version and the build dependencies"
    # shellcheck disable=SC2046
    in_root "$root" "apt-get -o Acquire::Check-Valid-Until=false update -qq &&
        DEBIAN_FRONTEND=noninteractive apt-get -o Acquire::Check-Valid-Until=false install -y -qq \
            --no-install-recommends $packages >/dev/null" ||
        die "installing PostgreSQL $version in the $suite root failed"
    # The marker holds the list of packages, so that a cached root can be completed when it changes.
    echo "$packages" | as_root tee "$root/.pg_ratelimit-root-complete" >/dev/null
    log "PostgreSQL $version root: ready in $(($(date +%s) - started)) s"
}

case "${1:-}" in
    path) root_dir "$2" ;;
    make) as_root mkdir -p "$ROOTS"; make_root "$2" ;;
    run)
        version=$2
        shift 2
        [ -f "$(root_dir "$version")/.pg_ratelimit-root-complete" ] || die "no root for PostgreSQL $version: make it first"
        in_root "$(root_dir "$version")" "$@"
        ;;
    copy)
        [ -f "$(root_dir "$2")/.pg_ratelimit-root-complete" ] || die "no root for PostgreSQL $2: make it first"
        in_root "$(root_dir "$2")" 'set -e; rm -rf /build/pg_ratelimit; mkdir -p /build/pg_ratelimit
            git config --global --add safe.directory /src
            cd /src && git ls-files -z --cached --others --exclude-standard |
                tar --null -T - -cf - | tar -xf - -C /build/pg_ratelimit'
        ;;
    *) die "usage: $0 path|make|copy VERSION | run VERSION CMD..." ;;
esac
