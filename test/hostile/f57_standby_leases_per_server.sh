#!/usr/bin/env bash
# Finding 57 (low-medium, careless user): on a hot standby, rate_limit_acquire admits N holders of its own,
# blind to the primary's leases (they are locks in each server's own lock manager), and nothing says so:
# not the README's leases section (which documents "each server counts on its own" for memory limits only),
# not an error. rate_limit_acquire is a plain SELECT, which read/write-splitting poolers and
# target_session_attrs=prefer-standby happily send to a replica: with one primary and two replicas, "at
# most 3 exports per customer" becomes 9. Durable and unlogged rate limits refuse to consume on a standby
# (25006), so the same routing mistake fails loudly there; here it over-admits silently.
# Attack: a primary and a streaming hot standby (pg_basebackup -R); N = 1; a session on the primary holds
# the key's slot; a session on the standby acquires the same key.
# Expected: refused on the standby (25006, as a durable rate limit's request), or the README stating that
# leases are per server. Fixed: rate_limit_acquire refuses on a standby (25006). Starts its own primary
# (own_cluster.sh) and a standby beside it.
here=$(dirname "$0")
source "$here/lib.sh"
source "$here/own_cluster.sh"
own_cluster_start -c max_prepared_transactions=2
export PGDATABASE=postgres PGOPTIONS="-c client_min_messages=error"  # autocommit probes warn otherwise
p() { psql -X -q -At -v ON_ERROR_STOP=1 "$@"; }
SB_DIR=$(mktemp -d "${TMPDIR:-/tmp}/review_standby.XXXXXX")
chmod 755 "$SB_DIR"
[ "$(id -u)" -eq 0 ] && chown postgres: "$SB_DIR"
stop_standby() { "${OWN_AS_SERVER[@]}" pg_ctl -D "$SB_DIR/data" -m immediate -w stop >/dev/null 2>&1; rm -rf "$SB_DIR"; own_cluster_stop; }
trap stop_standby EXIT
p -c "CREATE EXTENSION pg_ratelimit" -c "SELECT rate_limit_define('exports', rate => 1, period => '1 hour', algorithm => 'concurrency')" >/dev/null || exit 2
"${OWN_AS_SERVER[@]}" pg_basebackup -h "$PGHOST" -p 5432 -U postgres -D "$SB_DIR/data" -R -X stream -c fast >"$SB_DIR/bb.log" 2>&1 ||
    { cat "$SB_DIR/bb.log"; exit 2; }
"${OWN_AS_SERVER[@]}" pg_ctl -D "$SB_DIR/data" -l "$SB_DIR/server.log" -w -t 60 \
    -o "-c listen_addresses='' -c unix_socket_directories='$SB_DIR' -p 5432 -c hot_standby=on -c shared_preload_libraries=pg_ratelimit -c max_prepared_transactions=2" \
    start >/dev/null || { tail "$SB_DIR/server.log"; exit 2; }
[ "$(PGHOST=$SB_DIR p -c "SELECT pg_is_in_recovery()")" = t ] || { echo "no standby"; exit 2; }
# The primary's holder: a session lease kept for 4 s.
p -c "SELECT allowed FROM rate_limit_acquire('acme', 'exports', 'session')" -c "SELECT pg_sleep(4)" >"$SB_DIR/holder.out" 2>&1 &
holder=$!
for _ in $(seq 1 50); do [ "$(p -c "SELECT count(*) FROM pg_locks WHERE objsubid = 21070 AND granted")" = 1 ] && break; sleep 0.1; done
primary=$(p -c "SELECT allowed FROM rate_limit_acquire('acme', 'exports')")
standby=$(PGHOST=$SB_DIR psql -X -q -At -v VERBOSITY=sqlstate -c "SELECT allowed FROM rate_limit_acquire('acme', 'exports')" 2>&1)
wait "$holder"
echo "slot held on the primary; another acquire there: $primary; on the standby: $standby"
[ "$(head -n 1 "$SB_DIR/holder.out")" = t ] && [ "$primary" = f ] || { echo "unexpected setup"; exit 2; }
[ "$standby" = "ERROR:  25006" ] && holds "the standby refuses to acquire (25006)"
reproduced "N = 1 held on the primary: the standby admitted a second holder, silently"
