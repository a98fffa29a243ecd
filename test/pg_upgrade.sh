#!/usr/bin/env bash
# pg_upgrade of a cluster using pg_ratelimit: limits, overrides and table keys come across as they are, and
# memory keys too when the old server's save file is copied into the new data directory before its first
# start (README, Upgrading). Debian's archive has no two major versions in one release, so the old and the
# new clusters are of the same version here (PG_MAJOR: the host's 15, or a matrix root's), as PostgreSQL's
# own pg_upgrade tests do: the extension's part of the procedure is what this checks. Exits non-zero on any
# difference.
set -euo pipefail
source "$(dirname "$0")/../scripts/common.sh"
cases=0
pass() { echo "ok: $*"; cases=$((cases + 1)); }
fail() { echo "FAILED: $*" >&2; exit 1; }

build_and_install_extension >/dev/null
cluster_init old
cluster_start old -c shared_preload_libraries=pg_ratelimit
use_cluster old
p() { psql -X -q -At -v ON_ERROR_STOP=1 "$@"; }
createdb rl_app
p -d rl_app >/dev/null <<'SQL'
CREATE EXTENSION pg_ratelimit;
SELECT rate_limit_define('api', rate => 100, period => '1 day', max_reserved => 50);
SELECT rate_limit_define('cell', rate => 30, period => '1 day', algorithm => 'gcra', capacity => 16);
SELECT rate_limit_define('mem', rate => 100, period => '10 days', storage => 'memory');
SELECT rate_limit_define('fast', rate => 100, period => '1 day', storage => 'unlogged');
SELECT rate_limit_override('gold', 'api', 1000);
SELECT count(rate_limit_request(k, l, 7)) FROM unnest(ARRAY['api', 'cell', 'mem', 'fast']) l,
       unnest(ARRAY['alice', 'bob', 'gold']) k;
SQL
snapshot() {
    p -d rl_app <<'SQL'
SET extra_float_digits = 3;
SELECT 'config', name, algorithm, rate, period, capacity, max_reserved, storage, epoch FROM rate_limit_config ORDER BY 2;
SELECT 'state', limit_name, key, shard, value, ts FROM rate_limit_state ORDER BY 2, 3, 4;
SELECT 'override', limit_name, key, rate FROM rate_limit_override ORDER BY 2, 3;
SELECT 'memory', k, (rate_limit_check(k, 'mem')).remaining FROM unnest(ARRAY['alice', 'bob', 'gold']) k ORDER BY 2;
SQL
}
snapshot >"$RUN_DIR/before"
grep -q '^memory|alice|92$' "$RUN_DIR/before" || fail "unexpected setup: $(grep '^memory' "$RUN_DIR/before")"
cluster_stop old   # a clean shutdown: the memory save file is written
old_data=$(cluster_dir old)/data
[ -f "$old_data/pg_stat/pg_ratelimit_memory.state" ] || fail "no memory save file after a clean shutdown"

cluster_init new
new_data=$(cluster_dir new)/data
log "pg_upgrade (PostgreSQL $PG_MAJOR to $PG_MAJOR)"
upgrade_dir=$RUN_DIR/pg_upgrade
mkdir -p "$upgrade_dir"
[ "$(id -u)" -eq 0 ] && chown postgres: "$upgrade_dir"
(cd "$upgrade_dir" && "${RUN_AS_SERVER[@]}" "$PG_BIN/pg_upgrade" -U postgres -b "$PG_BIN" -B "$PG_BIN" \
    -d "$old_data" -D "$new_data" -s "$upgrade_dir" -o "-c shared_preload_libraries=pg_ratelimit" \
    -O "-c shared_preload_libraries=pg_ratelimit" >"$upgrade_dir/out.log" 2>&1) ||
    { tail -n 30 "$upgrade_dir/out.log"; fail "pg_upgrade"; }
pass "pg_upgrade of a cluster with pg_ratelimit (limits of every storage, overrides, keys)"
# The README's step: the old server's memory save file, into the new data directory before it starts.
"${RUN_AS_SERVER[@]}" cp "$old_data/pg_stat/pg_ratelimit_memory.state" "$new_data/pg_stat/"
cluster_start new -c shared_preload_libraries=pg_ratelimit
use_cluster new
snapshot >"$RUN_DIR/after"
diff -u "$RUN_DIR/before" "$RUN_DIR/after" || fail "limits, overrides or keys differ after pg_upgrade"
pass "every definition, override and key (tables and memory) is the same on the upgraded cluster"
[ "$(p -d rl_app -c "SELECT allowed FROM rate_limit_request('alice', 'api')")" = t ] || fail "request after pg_upgrade"
pass "requests work on the upgraded cluster"
echo "cases: $cases"
