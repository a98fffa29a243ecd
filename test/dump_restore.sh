#!/usr/bin/env bash
# Limits, per-key overrides and key state survive pg_dump / pg_restore, including a redefined 'default'
# (which collides with the row CREATE EXTENSION inserts), a limit in use, a sharded one, and overrides of
# 'default' and of another limit (the restored backends decide with them). Needs a server through the libpq
# environment (scripts/test.sh provides one). Exits non-zero on any difference.
#   test/dump_restore.sh              dump and restore on this server
#   test/dump_restore.sh dump DIR     fill and dump here (DIR/dump, DIR/before): for another major version
#   test/dump_restore.sh restore DIR  restore DIR/dump here (a newer PostgreSQL: the version matrix) and
#                                     compare with DIR/before
set -euo pipefail
mode=${1:-both}
shared=${2:-}
work=$(mktemp -d)
drop_databases() { dropdb --if-exists rl_dump_source 2>/dev/null; dropdb --if-exists rl_dump_target 2>/dev/null; }
trap 'rm -rf "$work"; drop_databases' EXIT
drop_databases
if [ "$mode" = restore ]; then
    cp "$shared/dump" "$shared/before" "$work/"
    server_version=$(psql -X -At -c 'SHOW server_version_num')
    echo "restoring a dump of PostgreSQL $(cat "$shared/version") into PostgreSQL $server_version"
fi

[ "$mode" = restore ] || createdb rl_dump_source
[ "$mode" = restore ] || psql -q -X -v ON_ERROR_STOP=1 -d rl_dump_source >/dev/null <<'SQL'
CREATE EXTENSION pg_ratelimit;
SET pg_ratelimit.fake_now = '2026-01-01 00:00:00+00';
SELECT rate_limit_define('default', rate => 7, period => '1 second', capacity => 9);
SELECT rate_limit_define('send_message', rate => 5, period => '2 minutes', algorithm => 'fixed_window',
                         max_reserved => 3, start => '2026-01-01 00:00:00+00');
SELECT rate_limit_define('hot', rate => 100, period => '1 minute', shards => 4);
SELECT rate_limit_define('cell', rate => 30, period => '1 minute', algorithm => 'gcra', capacity => 16,
                         jitter => '5 seconds');
SELECT rate_limit_define('sliding', rate => 50, period => '1 minute', algorithm => 'sliding_window');
SELECT rate_limit_request('user1');
SELECT rate_limit_request('user1', 'cell', 6);
SELECT rate_limit_request('user1', 'sliding', 20);
SELECT rate_limit_request('user1', 'send_message', 4);
SELECT rate_limit_request('user1', 'hot', 20) FROM generate_series(1, 3);
SELECT rate_limit_override('gold', 'default', 70);
SELECT rate_limit_override('gold', 'send_message', 50, capacity => 60, max_reserved => 'Infinity');
SELECT rate_limit_request('gold', 'send_message', 45);
SQL

snapshot() {
    psql -X -At -v ON_ERROR_STOP=1 -d "$1" <<'SQL'
SET timezone = 'UTC';
SELECT 'config', name, algorithm, rate, period, capacity, max_reserved, start, shards, jitter FROM rate_limit_config
 ORDER BY name;
SELECT 'state', limit_name, key, shard, value, ts FROM rate_limit_state ORDER BY limit_name, key, shard;
SELECT 'override', limit_name, key, rate, capacity, max_reserved FROM rate_limit_override ORDER BY limit_name, key;
SELECT 'policy', * FROM rate_limit_policy('gold', 'send_message');
SET pg_ratelimit.fake_now = '2026-01-01 00:00:00+00';
SELECT 'decision', * FROM rate_limit_check('user1');
SELECT 'decision', * FROM rate_limit_check('user1', 'send_message');
SELECT 'decision', * FROM rate_limit_check('user1', 'cell');
SELECT 'decision', * FROM rate_limit_check('user1', 'sliding');
SELECT 'decision', * FROM rate_limit_check('gold');
SELECT 'decision', * FROM rate_limit_check('gold', 'send_message');
-- Which shard a check would take is drawn at random, and with it reset_after: the key's units only.
SELECT 'decision', allowed, remaining FROM rate_limit_check('user1', 'hot');
SQL
}

if [ "$mode" != restore ]; then
    snapshot rl_dump_source >"$work/before"
    pg_dump -Fc -d rl_dump_source -f "$work/dump"
fi
if [ "$mode" = dump ]; then
    mkdir -p "$shared"
    cp "$work/dump" "$work/before" "$shared/"
    psql -X -At -c 'SHOW server_version_num' >"$shared/version"
    echo "dump_restore: dumped $(grep -c '^config' "$work/before") limits and $(grep -c '^state' "$work/before") keys to $shared"
    echo "cases: 1"
    exit 0
fi
createdb rl_dump_target
pg_restore --exit-on-error -d rl_dump_target "$work/dump"
snapshot rl_dump_target >"$work/after"

if ! diff -u "$work/before" "$work/after"; then
    echo "dump_restore: FAILED (limits or state differ after pg_restore)" >&2
    exit 1
fi
grep -q '^config|default|token_bucket|7|' "$work/after" || { echo "dump_restore: FAILED (redefined default lost)" >&2; exit 1; }
grep -q '^state|send_message|user1|0|1|' "$work/after" || { echo "dump_restore: FAILED (state lost)" >&2; exit 1; }
[ "$(grep -c '^state|hot|user1|' "$work/after")" -eq 3 ] || { echo "dump_restore: FAILED (shards lost)" >&2; exit 1; }
grep -q '^config|cell|gcra|30|.*|00:00:05$' "$work/after" || { echo "dump_restore: FAILED (gcra or jitter lost)" >&2; exit 1; }
grep -q '^decision|t|9|' "$work/after" || { echo "dump_restore: FAILED (gcra state lost)" >&2; exit 1; }
grep -q '^state|sliding|user1|0|20|' "$work/after" || { echo "dump_restore: FAILED (sliding state lost)" >&2; exit 1; }
grep -q '^override|default|gold|70||$' "$work/after" || { echo "dump_restore: FAILED (override lost)" >&2; exit 1; }
grep -q '^override|send_message|gold|50|60|Infinity$' "$work/after" || { echo "dump_restore: FAILED (override lost)" >&2; exit 1; }
grep -q '^decision|t|14|' "$work/after" || { echo "dump_restore: FAILED (override not applied after restore)" >&2; exit 1; }
echo "dump_restore: ok ($(grep -c '^config' "$work/after") limits, $(grep -c '^override' "$work/after") overrides, $(grep -c '^state' "$work/after") keys restored)"
echo "cases: 1"
