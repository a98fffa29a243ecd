#!/usr/bin/env bash
# Finding 34 (medium): overrides (and limits) applied by logical replication never reach the subscriber's
# cached sessions. The caches are dropped by relcache invalidations that only the tables' FOR EACH
# STATEMENT triggers queue (rate_limit_override_changed, rate_limit_config_changed), made ENABLE ALWAYS "so
# that a logical replication subscriber applying changes" invalidates too (config_triggers.cpp). But
# PostgreSQL's apply worker fires row triggers only, never statement triggers (documentation, "Logical
# Replication > Architecture": "The logical replication apply process currently only fires row triggers,
# not statement triggers"). A subscriber that receives its tiers from a central database keeps deciding
# with the tiers each session cached before: a key downgraded to 1 an hour on the publisher gets the
# limit's 1000 in every pooled session of the subscriber, for as long as the session lives.
# Expected: once the override is applied on the subscriber, a session that had cached "no override" decides
# under it (as a new session does).
# The script needs wal_level = logical: it starts a cluster of its own (the binaries on PATH, with the
# extension installed: test/hostile/run.sh provides them), publisher and subscriber as two databases.
source "$(dirname "$0")/lib.sh"
as_server=()
[ "$(id -u)" -eq 0 ] && as_server=(runuser -u postgres --)
dir=$(mktemp -d "${TMPDIR:-/tmp}/f34.XXXXXX")
chmod 755 "$dir"
[ "$(id -u)" -eq 0 ] && chown postgres: "$dir"
stop_own() {
    "${as_server[@]}" pg_ctl -D "$dir/data" -m immediate -w stop >/dev/null 2>&1
    rm -rf "$dir"
}
trap stop_own EXIT
"${as_server[@]}" initdb -D "$dir/data" -U postgres --auth=trust -E UTF8 --locale=C.UTF-8 >"$dir/initdb.log" 2>&1 ||
    { cat "$dir/initdb.log"; echo "initdb failed"; exit 2; }
"${as_server[@]}" pg_ctl -D "$dir/data" -l "$dir/server.log" -w -t 60 \
    -o "-c listen_addresses='' -c unix_socket_directories='$dir' -p 5432 -c wal_level=logical" start >/dev/null ||
    { tail "$dir/server.log"; echo "server did not start"; exit 2; }
export PGHOST=$dir PGPORT=5432 PGUSER=postgres
p() { psql -X -q -At -v ON_ERROR_STOP=1 "$@"; }

p -d postgres -c "CREATE DATABASE pub" -c "CREATE DATABASE sub"
for db in pub sub; do
    p -d $db -c "CREATE EXTENSION pg_ratelimit" -c "SELECT rate_limit_define('api', 1000, '1 hour')" >/dev/null
done
p -d pub -c "CREATE PUBLICATION tiers FOR TABLE rate_limit_override" \
  -c "SELECT 1 FROM pg_create_logical_replication_slot('tiers', 'pgoutput')" >/dev/null
p -d sub -c "CREATE SUBSCRIPTION tiers CONNECTION 'host=$dir port=5432 dbname=pub user=postgres' PUBLICATION tiers
             WITH (create_slot = false, slot_name = 'tiers', copy_data = false)" >/dev/null

# A pooled session of the subscriber, which has seen that 'api' has no override.
log=$dir/old_session.log
# It waits for the script between its calls (files, not sleeps: replication on a slow machine can take
# seconds).
p -d sub >"$log" 2>&1 <<SQL &
SELECT 'cached', allowed FROM rate_limit_request('someone', 'api');
\\! touch $dir/cached
$(until_file "$dir/replicated")
SELECT 'old session', count(*) FILTER (WHERE allowed) FROM rate_limit_request_many(array_fill('abuser'::text, ARRAY[20]), 'api');
SQL
old=$!
wait_for_file "$dir/cached" || echo "the session did not make its first call"
p -d pub -c "SELECT rate_limit_override('abuser', 'api', 1)" >/dev/null
for _ in $(seq 1 300); do
    [ "$(p -d sub -c "SELECT count(*) FROM rate_limit_override")" = 1 ] && break
    sleep 0.2
done
touch "$dir/replicated"
wait "$old"
cat "$log"
replicated=$(p -d sub -c "SELECT count(*) FROM rate_limit_override WHERE key = 'abuser'")
new=$(p -d sub -c "SELECT count(*) FILTER (WHERE allowed) FROM rate_limit_request_many(array_fill('abuser'::text, ARRAY[20]), 'api')")
old_admitted=$(sed -n 's/^old session|//p' "$log")
echo "replicated overrides: $replicated; 'abuser' admitted: old session $old_admitted of 20, then a new session $new of 20"
[ "$replicated" = 1 ] && [ -n "$old_admitted" ] || { echo "setup failed"; exit 2; }
if [ "$old_admitted" -gt 1 ]; then
    reproduced "an override applied by logical replication (abuser: 1 an hour) is not seen by a subscriber session that had cached the limit: it admitted $old_admitted of 20 (a new session then: $new)"
fi
holds "an override applied by logical replication reaches sessions that had cached the limit"
