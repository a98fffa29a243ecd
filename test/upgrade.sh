#!/usr/bin/env bash
# Upgrade in place, from the previous release to this one: release 0.1.0 (commit 2d8eb8a, built from a git
# worktree of this clone) fills a database with limits of every algorithm and storage, overrides, shards,
# a concurrency limit, key state in both tables and in memory; the server stops cleanly (the memory save
# file of 0.1.0), this release's library and scripts are installed over it, and the server starts again:
# - the database, still at 0.1.0, is served by the new library unchanged (every definition, key and
#   decision as before, the memory keys loaded from 0.1.0's file);
# - ALTER EXTENSION pg_ratelimit UPDATE brings it to this release, keeping every definition and key;
# - the updated extension's objects are exactly those of a new installation (functions, their
#   definitions, settings and privileges, tables, views, types, triggers);
# - the pg_regress and isolation suites pass in a database updated from 0.1.0.
# Exits non-zero on any difference. Every release that changes the SQL or the memory save file ships its
# update script and passes this test from the release before it (FROM_COMMIT, FROM_VERSION).
set -euo pipefail
source "$(dirname "$0")/../scripts/common.sh"
FROM_COMMIT=${FROM_COMMIT:-2d8eb8a}
FROM_VERSION=${FROM_VERSION:-0.1.0}
TO_VERSION=$(sed -n "s/^default_version = '\(.*\)'/\1/p" "$ROOT/pg_ratelimit.control")
cases=0
pass() { echo "ok: $*"; cases=$((cases + 1)); }
fail() { echo "FAILED: $*" >&2; exit 1; }

private_postgres
from=$RUN_DIR/release-$FROM_VERSION
git -C "$ROOT" cat-file -e "$FROM_COMMIT^{commit}" 2>/dev/null ||
    die "commit $FROM_COMMIT (release $FROM_VERSION) is not in this clone's history: the upgrade test needs a full clone"
git -C "$ROOT" worktree add --detach "$from" "$FROM_COMMIT" >/dev/null 2>&1 || die "git worktree add $FROM_COMMIT failed"
on_exit "git -C '$ROOT' worktree remove --force '$from'"
log "building release $FROM_VERSION ($FROM_COMMIT) and installing it"
make -C "$from" -s -j2 PG_CONFIG="$PG_CONFIG" >/dev/null
make -C "$from" -s install PG_CONFIG="$PG_CONFIG" >/dev/null
start_cluster -c shared_preload_libraries=pg_ratelimit -c pg_ratelimit.memory_keys=1000
p() { psql -X -q -At -v ON_ERROR_STOP=1 "$@"; }

createdb rl_upgraded
createdb rl_regress_upgraded
p -d rl_regress_upgraded -c "CREATE EXTENSION pg_ratelimit VERSION '$FROM_VERSION'"
p -d rl_upgraded >/dev/null <<SQL
CREATE EXTENSION pg_ratelimit VERSION '$FROM_VERSION';
CREATE ROLE rl_upgrade_app LOGIN;
SET pg_ratelimit.fake_now = '2026-01-01 00:00:00+00';
SELECT rate_limit_define('default', rate => 7, period => '1 second', capacity => 9);
SELECT rate_limit_define('tb', rate => 10, period => '1 minute', max_reserved => 20);
SELECT rate_limit_define('fw', rate => 5, period => '2 minutes', algorithm => 'fixed_window', start => '2026-01-01');
SELECT rate_limit_define('fw_keyed', rate => 5, period => '2 minutes', algorithm => 'fixed_window');
SELECT rate_limit_define('month', rate => 1000, period => '1 month', algorithm => 'fixed_window',
                         time_zone => 'Europe/Paris');
SELECT rate_limit_define('cell', rate => 30, period => '1 minute', algorithm => 'gcra', capacity => 16,
                         jitter => '5 seconds');
SELECT rate_limit_define('sliding', rate => 50, period => '1 minute', algorithm => 'sliding_window');
SELECT rate_limit_define('hot', rate => 100, period => '1 minute', shards => 4);
SELECT rate_limit_define('fast', rate => 100, period => '1 hour', storage => 'unlogged');
SELECT rate_limit_define('mem', rate => 100, period => '10 days', storage => 'memory');
SELECT rate_limit_define('mem_gcra', rate => 100, period => '10 days', algorithm => 'gcra', storage => 'memory');
SELECT rate_limit_define('seats', rate => 3, period => '1 hour', algorithm => 'concurrency');
SELECT rate_limit_define('watch', rate => 2, period => '1 hour', shadow => true);
SELECT rate_limit_override('gold', 'tb', 70);
SELECT rate_limit_override('gold', 'mem', 500, capacity => 600);
SELECT count(rate_limit_request(k, l, 1.5))
  FROM unnest(ARRAY['tb', 'fw', 'fw_keyed', 'month', 'cell', 'sliding', 'fast', 'watch', 'default']) l,
       unnest(ARRAY['alice', 'bob', 'gold', 'a key of more than fifty-five bytes, kept as a digest in memory']) k;
-- Memory keys on the real clock: the server drops saved entries already full when it loads them, by its
-- real clock. (The checks below pin the clock before them: the keys are read at their own time.)
RESET pg_ratelimit.fake_now;
SELECT count(rate_limit_request(k, l, 1.5)) FROM unnest(ARRAY['mem', 'mem_gcra']) l,
       unnest(ARRAY['alice', 'bob', 'gold', 'a key of more than fifty-five bytes, kept as a digest in memory']) k;
SET pg_ratelimit.fake_now = '2026-01-01 00:00:00+00';
SELECT rate_limit_request('alice', 'hot', 20) FROM generate_series(1, 3);
SELECT rate_limit_request('alice', 'tb', 8, reserve => true);
GRANT EXECUTE ON FUNCTION rate_limit_refund TO rl_upgrade_app;
SQL

snapshot() {  # every definition, override and stored key, and what checks say (the clock pinned)
    p -d rl_upgraded <<'SQL'
SET timezone = 'UTC';
SET extra_float_digits = 3;
SELECT 'config', name, algorithm, rate, period, capacity, max_reserved, start, shards, storage, epoch, jitter,
       time_zone, shadow FROM rate_limit_config ORDER BY name;
SELECT 'state', limit_name, key, shard, value, ts FROM rate_limit_state ORDER BY 2, 3, 4;
SELECT 'unlogged', limit_name, key, shard, value, ts FROM rate_limit_state_unlogged ORDER BY 2, 3, 4;
SELECT 'override', limit_name, key, rate, capacity, max_reserved FROM rate_limit_override ORDER BY 2, 3;
SET pg_ratelimit.fake_now = '2026-01-01 00:00:10+00';
SELECT 'check', l, k, c.allowed, c.remaining, c.retry_after, c.reset_after
  FROM unnest(ARRAY['tb', 'fw', 'fw_keyed', 'month', 'cell', 'sliding', 'fast', 'mem', 'mem_gcra', 'watch', 'default']) l,
       unnest(ARRAY['alice', 'bob', 'gold', 'a key of more than fifty-five bytes, kept as a digest in memory']) k,
       LATERAL rate_limit_check(k, l) c ORDER BY 2, 3;
SELECT 'hot', allowed, remaining FROM rate_limit_check('alice', 'hot');
SELECT 'policy', * FROM rate_limit_policy('gold', 'mem');
SELECT 'grant', has_function_privilege('rl_upgrade_app', 'rate_limit_refund(text, text, float8)', 'EXECUTE');
SQL
}
version() { p -d "$1" -c "SELECT extversion FROM pg_extension WHERE extname = 'pg_ratelimit'"; }

snapshot >"$RUN_DIR/before"
[ "$(grep -c "^state|" "$RUN_DIR/before")" -ge 30 ] && [ "$(grep -c '^check|' "$RUN_DIR/before")" = 44 ] ||
    fail "the $FROM_VERSION database was not filled as expected"
pass "release $FROM_VERSION filled $(grep -c '^config|' "$RUN_DIR/before") limits, $(grep -c '^state|\|^unlogged|' "$RUN_DIR/before") stored keys and memory keys"

log "stopping cleanly (release $FROM_VERSION saves its memory keys), installing release $TO_VERSION over it"
cluster_stop main
[ -f "$CLUSTER_DIR/data/pg_stat/pg_ratelimit_memory.state" ] || fail "release $FROM_VERSION wrote no memory save file"
build_and_install_extension >/dev/null
cluster_start main -c shared_preload_libraries=pg_ratelimit -c pg_ratelimit.memory_keys=1000

[ "$(version rl_upgraded)" = "$FROM_VERSION" ] || fail "the database is not at $FROM_VERSION before the update"
snapshot >"$RUN_DIR/served"
diff -u "$RUN_DIR/before" "$RUN_DIR/served" || fail "the new library serves the $FROM_VERSION database differently"
pass "the new library serves the database still at $FROM_VERSION unchanged (memory keys read from $FROM_VERSION's save file)"
grep -q "was written by release 0.1.0" "$CLUSTER_DIR/server.log" || fail "no LOG line for $FROM_VERSION's save file"
pass "the server says it read release $FROM_VERSION's memory save file"
p -d rl_upgraded -c "SELECT rate_limit_request('carol', 'tb'), rate_limit_acquire('carol', 'seats')" >/dev/null ||
    fail "calls on the $FROM_VERSION database failed"
pass "requests and leases work on the $FROM_VERSION database with the new library"
reserve_before=$(p -d rl_upgraded -c "SELECT rate_limit_reserve('k', 'tb', 1, '1 second')" 2>&1 || true)
grep -q 'does not exist' <<<"$reserve_before" || fail "rate_limit_reserve answered before the update: $reserve_before"
pass "rate_limit_reserve does not exist before the update (42883)"

p -d rl_upgraded -c "SELECT rate_limit_reset('carol', 'tb')" >/dev/null
p -d rl_upgraded -c "ALTER EXTENSION pg_ratelimit UPDATE"
[ "$(version rl_upgraded)" = "$TO_VERSION" ] || fail "ALTER EXTENSION UPDATE did not reach $TO_VERSION"
snapshot >"$RUN_DIR/after"
diff -u "$RUN_DIR/before" "$RUN_DIR/after" || fail "definitions or keys changed across ALTER EXTENSION UPDATE"
pass "ALTER EXTENSION pg_ratelimit UPDATE ($FROM_VERSION -> $TO_VERSION) kept every definition, key and decision"
[ "$(p -d rl_upgraded -c "SELECT allowed FROM rate_limit_reserve('k', 'tb', 1, '1 second')")" = t ] ||
    fail "rate_limit_reserve after the update"
[ "$(p -d rl_upgraded -c "SET ROLE rl_upgrade_app; SELECT allowed FROM rate_limit_reserve('k2', 'tb', 1, '1 second')")" = t ] ||
    fail "rate_limit_reserve for a role with the default grants after the update"
pass "rate_limit_reserve works after the update, for roles with the default grants too"

# The updated extension's objects against a new installation's.
objects() {
    p -d "$1" <<'SQL'
SELECT pg_describe_object(classid, objid, objsubid) FROM pg_depend
 WHERE refobjid = (SELECT oid FROM pg_extension WHERE extname = 'pg_ratelimit') AND deptype = 'e' ORDER BY 1;
SELECT p.oid::regprocedure::text, p.prosecdef, p.provolatile, p.proconfig, p.proacl, p.prorettype::regtype,
       pg_get_function_arguments(p.oid), p.prosrc, p.probin, obj_description(p.oid, 'pg_proc')
  FROM pg_proc p JOIN pg_depend d ON d.classid = 'pg_proc'::regclass AND d.objid = p.oid
 WHERE d.refobjid = (SELECT oid FROM pg_extension WHERE extname = 'pg_ratelimit') AND d.deptype = 'e' ORDER BY 1;
SELECT c.relname, c.relkind, c.relacl, c.relpersistence, pg_get_viewdef(c.oid)
  FROM pg_class c WHERE c.relnamespace = 'public'::regnamespace ORDER BY 1;
SELECT a.attrelid::regclass::text, a.attname, a.atttypid::regtype, a.attnotnull, pg_get_expr(ad.adbin, ad.adrelid)
  FROM pg_attribute a LEFT JOIN pg_attrdef ad ON ad.adrelid = a.attrelid AND ad.adnum = a.attnum
 WHERE a.attrelid IN (SELECT oid FROM pg_class WHERE relnamespace = 'public'::regnamespace) AND a.attnum > 0
 ORDER BY 1, 2;
SELECT conrelid::regclass::text, conname, pg_get_constraintdef(oid) FROM pg_constraint
 WHERE connamespace = 'public'::regnamespace ORDER BY 1, 2;
SELECT tgrelid::regclass::text, tgname, tgenabled, pg_get_triggerdef(oid) FROM pg_trigger WHERE NOT tgisinternal ORDER BY 1, 2;
SELECT evtname, evtevent, evtenabled, evttags FROM pg_event_trigger ORDER BY 1;
SELECT extname, extversion, extrelocatable, extconfig::regclass[], extcondition FROM pg_extension
 WHERE extname = 'pg_ratelimit';
SQL
}
createdb rl_fresh
p -d rl_fresh -c "CREATE EXTENSION pg_ratelimit"
p -d rl_regress_upgraded -c "ALTER EXTENSION pg_ratelimit UPDATE"
objects rl_fresh >"$RUN_DIR/fresh_objects"
objects rl_regress_upgraded >"$RUN_DIR/updated_objects"
diff -u "$RUN_DIR/fresh_objects" "$RUN_DIR/updated_objects" ||
    fail "the update script's result differs from a new installation of $TO_VERSION"
pass "the updated extension's objects are those of a new installation ($(wc -l <"$RUN_DIR/fresh_objects") lines compared)"

log "pg_regress and isolation in a database updated from $FROM_VERSION"
# The suites count the server's memory entries: the filled database goes first, its entries with it (its
# limits dropped first: keys of over 55 bytes loaded from 0.1.0's file do not tell their database).
p -d rl_upgraded -c "SELECT count(rate_limit_drop(name)) FROM rate_limit_config WHERE name <> 'default'" >/dev/null
dropdb rl_upgraded
dropdb rl_fresh
pgxs=$(dirname "$($PG_CONFIG --pgxs)")
regress_tests=$(cd "$ROOT/sql" && ls ./*.sql | sed 's|^\./||; s|\.sql$||' | sort | tr '\n' ' ')
(cd "$ROOT" && "$pgxs/../test/regress/pg_regress" --inputdir=. --bindir="$PG_BIN" --use-existing \
    --dbname=rl_regress_upgraded $regress_tests) || { cat "$ROOT/regression.diffs"; fail "pg_regress on the updated database"; }
pass "pg_regress passes in the database updated from $FROM_VERSION"
isolation_tests=$(cd "$ROOT/specs" && ls ./*.spec | sed 's|^\./||; s|\.spec$||' | sort | tr '\n' ' ')
(cd "$ROOT" && "$pgxs/../test/isolation/pg_isolation_regress" --inputdir=. --outputdir=output_iso \
    --bindir="$PG_BIN" --use-existing --dbname=rl_regress_upgraded $isolation_tests) ||
    { cat "$ROOT/output_iso/regression.diffs"; fail "isolation on the updated database"; }
pass "the isolation suite passes in the database updated from $FROM_VERSION"
echo "cases: $cases"
