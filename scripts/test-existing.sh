#!/usr/bin/env bash
# The SQL-level suites against a server you already run (YugabyteDB, a managed PostgreSQL, a version the
# matrix does not have), where pg_ratelimit's files are installed and CONNINFO connects as a superuser:
# pg_regress and the isolation suite (--use-existing), the concurrency hammer and the client library's
# tests. They run in a database of their own, created (with CREATE EXTENSION) and dropped here.
#   scripts/test-existing.sh 'host=db.example.com port=5432 user=postgres dbname=postgres'
#   scripts/test-existing.sh postgresql://postgres@localhost:5433/postgres
# Needs on this machine: psql, the pg_regress and pg_isolation_regress of a PostgreSQL server-dev package
# (PG_CONFIG, default the host's 15), CMake and libpqxx (scripts/common.sh installs them on Debian). The
# memory-limit tests need shared_preload_libraries = 'pg_ratelimit' on that server, and count the server's
# memory entries: run on a server whose memory limits are idle. Exits non-zero if any suite fails.
set -euo pipefail
source "$(dirname "$0")/common.sh"
conninfo=${1:?usage: $0 CONNINFO}
DATABASE=${PG_RATELIMIT_TEST_DATABASE:-pg_ratelimit_existing_test}

# Where CONNINFO leads, as libpq's environment: pg_regress takes no connection string.
read -r host port user < <(psql -X -At "$conninfo" -c '\echo :HOST :PORT :USER') ||
    die "cannot connect with \"$conninfo\""
export PGHOST=$host PGPORT=$port PGUSER=$user PGDATABASE=$DATABASE
[ "$(psql -X -At -d "$conninfo" -c 'SELECT rolsuper FROM pg_roles WHERE rolname = current_user')" = t ] ||
    die "$user is not a superuser there: the suites define limits, pin the clock and create roles"
log "server: $(psql -X -At "$conninfo" -c 'SELECT version()')"

cases=0
failed=()
step() {  # step NAME COMMAND...
    local name=$1
    shift
    log "$name"
    if "$@"; then cases=$((cases + 1)); echo "ok: $name"; else failed+=("$name"); echo "FAILED: $name"; fi
}

psql -X -q -d "$conninfo" -c "DROP DATABASE IF EXISTS $DATABASE" -c "CREATE DATABASE $DATABASE" >/dev/null
trap 'psql -X -q -d "$conninfo" -c "DROP DATABASE IF EXISTS $DATABASE WITH (FORCE)" >/dev/null 2>&1 || true' EXIT
psql -X -q -v ON_ERROR_STOP=1 -c 'CREATE EXTENSION pg_ratelimit' >/dev/null
log "pg_ratelimit $(psql -X -At -c "SELECT extversion FROM pg_extension WHERE extname = 'pg_ratelimit'") in $DATABASE"

pgxs=$(dirname "$($PG_CONFIG --pgxs)")
tests_of() { (cd "$ROOT/$1" && ls ./*."$2" | sed "s|^\./||; s|\.$2\$||" | sort | tr '\n' ' '); }
# shellcheck disable=SC2046
step "pg_regress (--use-existing)" bash -c "cd '$ROOT' && '$pgxs/../test/regress/pg_regress' --inputdir=. \
    --use-existing --dbname=$DATABASE $(tests_of sql sql) || { cat regression.diffs; exit 1; }"
# shellcheck disable=SC2046
step "isolation (--use-existing)" bash -c "cd '$ROOT' && '$pgxs/../test/isolation/pg_isolation_regress' \
    --inputdir=. --outputdir=output_iso --use-existing --dbname=$DATABASE $(tests_of specs spec) ||
    { cat output_iso/regression.diffs; exit 1; }"

log "building the hammer and the client library's tests (CMake, $ROOT/build)"
cmake -S "$ROOT" -B "$ROOT/build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DPG_RATELIMIT_BUILD_TESTS=ON \
    ${PG_RATELIMIT_CMAKE_ARGS:-} >/dev/null
cmake --build "$ROOT/build" -j2 >/dev/null
step "hammer and client library (ctest -L server)" \
    ctest --test-dir "$ROOT/build" -L server --no-tests=error --output-on-failure

echo "cases: $cases"
[ ${#failed[@]} -eq 0 ] || { printf 'FAILED: %s\n' "${failed[@]}" >&2; exit 1; }
