#!/usr/bin/env bash
# Hostile review of the scale-out layer (proxy/pg_ratelimit_proxy.sql on PL/Proxy, scripts/cluster.sh),
# against its own scripts/cluster.sh with 2 partitions. Each attack tried is a check of what SHOULD hold:
# "ok: ..." when it holds, "FAILED: ..." for a finding. Three kinds of attacker:
# - a tenant with only the default grants on the proxy database (role rl_tenant), and one that was also
#   given USAGE on the foreign server (rl_tenant_u: what a DBA must grant today for a role to call anything);
# - a DBA (ALTER SERVER, a partition down, different definitions, modular_mapping, swapped partitions,
#   pg_dump of the proxy database);
# (the C++ client's findings are described in the review's report, not built here).
# Prints "cases: N" (checks that held); exits non-zero on any finding. About 30 s.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
source "$here/../../scripts/common.sh"
cases=0
failures=0
check() {  # check NAME EXPECTED ACTUAL
    if [ "$2" = "$3" ]; then echo "ok: $1"; cases=$((cases + 1)); else echo "FAILED: $1: expected [$2], got [$3]"; failures=$((failures + 1)); fi
}
DIR=$(mktemp -d "${TMPDIR:-/tmp}/pg_ratelimit_attacks.XXXXXX")
trap '"$ROOT/scripts/cluster.sh" stop "$DIR" >/dev/null 2>&1; rm -rf "$DIR" "$DIR.start.log"' EXIT
ensure_packages "${PACKAGES[@]}"
"$ROOT/scripts/cluster.sh" start 2 "$DIR" >"$DIR.start.log" 2>&1 || { cat "$DIR.start.log"; exit 1; }
PG_BIN=$(sed -n 's/^PG_BIN=//p' "$DIR.start.log")
psql_as() { local host=$1 user=$2; shift 2; "$PG_BIN/psql" -X -q -At -h "$host" -p 5432 -U "$user" -d postgres "$@" 2>&1; }
px() { psql_as "$DIR/proxy" postgres "$@"; }
tn() { psql_as "$DIR/proxy" rl_tenant "$@"; }      # default grants only
tu() { psql_as "$DIR/proxy" rl_tenant_u "$@"; }    # default grants + USAGE on the foreign server
part() { local k=$1; shift; psql_as "$DIR/p$k" postgres "$@"; }
sqlstate() { sed -n 's/^ERROR:  \([0-9A-Z]\{5\}\).*/\1/p' | head -n 1; }
# A key of partition $1 (as the proxy reckons it), from the prefix $2.
key_on() { px -c "SELECT k FROM unnest(array(SELECT '$2' || g FROM generate_series(1, 64) g)) k WHERE rate_limit_partition_of(k) = $1 LIMIT 1"; }
# Where a key's state of limit $2 is stored: the partitions holding a row, e.g. "0", "1" or "01".
stored_on() { local k out=""; for k in 0 1; do
    [ "$(part "$k" -c "SELECT count(*) FROM rate_limit_state WHERE key = '$1' AND limit_name = '$2'")" != 0 ] && out+=$k
done; echo "${out:-none}"; }

px -c "CREATE ROLE rl_tenant LOGIN" -c "CREATE ROLE rl_tenant_u LOGIN" \
   -c "GRANT USAGE ON FOREIGN SERVER pg_ratelimit TO rl_tenant_u" \
   -c "SELECT rate_limit_define('cap', 10, '1 day')" -c "SELECT rate_limit_define('big', 1000, '1 day')" >/dev/null
k0=$(key_on 0 a); k1=$(key_on 1 a)

# ---- (a) a hostile tenant -------------------------------------------------------------------------------------

# PL/Proxy checks USAGE on the foreign server for the calling role: the DBA grants it to the roles that call
# the proxy (docs/scale-out.md, "Privileges"); without it, a clear error and nothing decided.
check "tenant without USAGE on the server: permission denied for foreign server pg_ratelimit" 1 \
    "$(tn -c "SELECT allowed FROM rate_limit_request('$k0', 'big')" | grep -c 'permission denied for foreign server pg_ratelimit')"
check "tenant with USAGE: rate_limit_request through the proxy works, as on a single node" t \
    "$(tu -c "SELECT allowed FROM rate_limit_request('$k0', 'big')" | head -n 1)"
check "tenant (default grants): cannot make a user mapping of its own (to pick the partitions' role)" 1 \
    "$(tn -c "CREATE USER MAPPING FOR CURRENT_USER SERVER pg_ratelimit OPTIONS (user 'postgres')" | grep -c 'permission denied')"
check "tenant with USAGE: a user mapping of its own cannot redirect to another host or database" 2 \
    "$(tu -c "CREATE USER MAPPING FOR CURRENT_USER SERVER pg_ratelimit OPTIONS (host '/tmp')" \
          -c "CREATE USER MAPPING FOR CURRENT_USER SERVER pg_ratelimit OPTIONS (dbname 'template1')" | grep -c 'invalid option')"
check "tenant: the user mapping's options are hidden (the superuser sees them)" "t|f" \
    "$(px -c "SELECT umoptions IS NOT NULL FROM pg_user_mappings WHERE srvname = 'pg_ratelimit'")|$(tu -c "SELECT umoptions IS NOT NULL FROM pg_user_mappings WHERE srvname = 'pg_ratelimit'")"
check "tenant: the owner-only helpers (define/drop/cleanup on partitions) are refused" 3 \
    "$(tu -c "SELECT rate_limit_define_on_partitions('x', 1, '1 day', 'token_bucket', NULL, NULL, NULL, 1, 'durable', NULL, 'proportional', NULL, false)" \
          -c "SELECT rate_limit_drop_on_partitions('cap')" -c "SELECT rate_limit_cleanup_on_partitions(NULL, NULL)" | grep -c 'permission denied')"

# The routing helper of request_all takes the partition as an argument and is executable by PUBLIC: the
# same key can be decided on every partition, each with a full allowance.
tu -c "SELECT allowed FROM rate_limit_request('$k0', 'cap', 10)" >/dev/null
tu -c "SELECT allowed FROM rate_limit_request_all_routed(ARRAY['$k0'], ARRAY['cap'], ARRAY[10::float8], 1)" >/dev/null
check "tenant: rate_limit_request_all_routed(..., partition_hash) cannot decide a key of partition 0 on partition 1 (2x the allowance)" 0 \
    "$(part 1 -c "SELECT count(*) FROM rate_limit_state WHERE key = '$k0' AND limit_name = 'cap'")"
check "tenant: rate_limit_request_many_split called directly with a NULL key: 22004, the proxy still answers" "22004 1" \
    "$(tu -v VERBOSITY=sqlstate -c "SELECT * FROM rate_limit_request_many_split(ARRAY['a', NULL], 'big', ARRAY[1, 1]::float8[])" | sqlstate) $(tu -c 'SELECT 1')"

# search_path: a temporary function of the tenant's own cannot take the routing over (pg_temp is never
# searched for functions), nor can a temporary type named like the decision change what the proxy returns.
shadow=$(tu -c "CREATE FUNCTION pg_temp.rate_limit_key_hash(key text) RETURNS integer LANGUAGE sql AS 'SELECT 0'" \
            -c "CREATE FUNCTION pg_temp.hashtext(text) RETURNS integer LANGUAGE sql AS 'SELECT 0'" \
            -c "CREATE TEMP TABLE rate_limit_decision (x int)" \
            -c "SET search_path = pg_temp, public" \
            -c "SELECT allowed FROM rate_limit_request('$(key_on 1 sp)', 'big')" -c "SELECT rate_limit_partition_of('$(key_on 1 sp)')")
check "tenant: pg_temp functions and types on search_path do not move a key (decided on partition 1)" "t 1 1" \
    "$(echo $shadow) $(stored_on "$(key_on 1 sp)" big)"

# Odd arguments: refused as a single node refuses them, without consuming, and without wedging anything.
for args in "NULL, 'big'" "'n', NULL" "'n', 'big', -1" "'n', 'big', 'NaN'" "'n', 'big', NULL" "repeat('k', 2000), 'big'"; do
    check "tenant: rate_limit_request($args) through the proxy = on a single node" \
        "$(part 0 -v VERBOSITY=sqlstate -c "SELECT allowed FROM rate_limit_request($args)" | sed 's/^ERROR:  //')" \
        "$(tu -v VERBOSITY=sqlstate -c "SELECT allowed FROM rate_limit_request($args)" | sed 's/^ERROR:  //')"
done
check "tenant: a 10 MB key and a non-UTF-8 key are refused (22001, 22021); proxy and partitions still answer" "22001 22021 1 1 1" \
    "$(tu -v VERBOSITY=sqlstate -c "SELECT rate_limit_request(repeat('k', 10 * 1024 * 1024), 'big')" | sqlstate) $(tu -v VERBOSITY=sqlstate -c "SELECT rate_limit_request(E'\\xff', 'big')" | sqlstate) $(tu -c 'SELECT 1') $(part 0 -c 'SELECT 1') $(part 1 -c 'SELECT 1')"

# A refused argument is a remote error, and PL/Proxy drops its partition connection after each: a tenant can
# make the partition fork a backend per call. The proxy checks NULL keys before sending; it should check
# what else it can (key length, cost range) too.
long_key=$(px -c "SELECT k FROM (SELECT repeat('k', 1100 + g) k FROM generate_series(1, 20) g) x WHERE rate_limit_partition_of(k) = 0 LIMIT 1")
pids=$(tu <<SQL
SELECT allowed FROM rate_limit_request('$k0', 'big');
\! "$PG_BIN/psql" -X -q -At -h "$DIR/p0" -U postgres -d postgres -c "SELECT string_agg(pid::text, ',') FROM pg_stat_activity WHERE backend_type = 'client backend' AND pid <> pg_backend_pid()"
SELECT rate_limit_request('$long_key', 'big');
SELECT rate_limit_request('$k0', 'big', -1);
SELECT rate_limit_request('$k0', 'big', 'NaN');
SELECT allowed FROM rate_limit_request('$k0', 'big');
\! "$PG_BIN/psql" -X -q -At -h "$DIR/p0" -U postgres -d postgres -c "SELECT string_agg(pid::text, ',') FROM pg_stat_activity WHERE backend_type = 'client backend' AND pid <> pg_backend_pid()"
SQL
)
pids=$(grep -E '^[0-9,]+$' <<<"$pids" | tr '\n' ' ')
new_pids() { local before=",$1," pid out=""; for pid in ${2//,/ }; do [[ $before == *",$pid,"* ]] || out+="$pid "; done; echo "${out:-none}"; }
check "tenant: refused arguments (a too-long key, cost -1, NaN) do not make the proxy reconnect to the partition" \
    "none" "$(set -- $pids; [ "$#" = 2 ] && new_pids "$1" "$2" || echo "pids: $pids")"

# An open transaction on the proxy holds nothing on the partition (each remote call committed).
held=$(tu <<SQL
BEGIN;
SELECT allowed FROM rate_limit_request('$k0', 'big');
\! "$PG_BIN/psql" -X -q -At -h "$DIR/p0" -U postgres -d postgres -c "SELECT count(*) FROM pg_stat_activity WHERE state LIKE 'idle in transaction%' OR wait_event_type = 'Lock'"
ROLLBACK;
SQL
)
check "tenant: an open proxy transaction leaves no partition session idle in transaction" "t 0" "$(echo $held)"

# Case and Unicode normalisation: different bytes are different keys, as on a single node, each decided on
# exactly the partition its hashtext names (never on two).
placed=""
for key in "Ünïcödé" "$(printf 'U\xcc\x88ni\xcc\x88co\xcc\x88de\xcc\x81')" "ÜNÏCÖDÉ" "ünïcödé "; do
    tu -c "SELECT rate_limit_request('$key', 'big')" >/dev/null
    placed+="$([ "$(stored_on "$key" big)" = "$(px -c "SELECT rate_limit_partition_of('$key')")" ] && echo y || echo "n($key)")"
done
check "tenant: case/NFC/NFD/trailing-space variants each decided on exactly their hash's partition" yyyy "$placed"

# Arrays: what a single node takes, the proxy takes, with the same answers and SQLSTATEs.
same=$(px -c "SELECT k FROM unnest(array(SELECT 'ra' || g FROM generate_series(1, 64) g)) k WHERE rate_limit_partition_of(k) = 1 LIMIT 2" | tr '\n' ',' | sed 's/,$//')
check "tenant: rate_limit_request_all with keys subscripted from 2 (one partition) works as on a single node" \
    "$(part 1 -c "SELECT count(*) FROM rate_limit_request_all('[2:3]={$same}'::text[], '[2:3]={big,big}'::text[])")" \
    "$(tu -c "SELECT count(*) FROM rate_limit_request_all('[2:3]={$same}'::text[], '[2:3]={big,big}'::text[])" | head -n 1)"
check "tenant: rate_limit_request_many on a 2-D array: the single node's SQLSTATE" \
    "$(part 0 -v VERBOSITY=sqlstate -c "SELECT * FROM rate_limit_request_many('{{a,b},{c,d}}'::text[], 'big')" | sqlstate)" \
    "$(tu -v VERBOSITY=sqlstate -c "SELECT * FROM rate_limit_request_many('{{a,b},{c,d}}'::text[], 'big')" | sqlstate)"
b0=$(key_on 0 bad); b1=$(key_on 1 bad)
tu -c "SELECT * FROM rate_limit_request_many(ARRAY['$b0', '$b1'], 'big', ARRAY[1, -1])" >/dev/null
check "tenant: rate_limit_request_many with one out-of-range cost consumes nothing anywhere (a single node refuses it whole)" \
    "none none" "$(stored_on "$b0" big) $(stored_on "$b1" big)"

# ---- (b) a DBA ----------------------------------------------------------------------------------------------

check "DBA: ALTER SERVER to 3 partitions is refused" 1 \
    "$(px -c "ALTER SERVER pg_ratelimit OPTIONS (ADD p2 'host=$DIR/p0 port=5432 dbname=postgres')" | grep -c 'power of 2')"
check "DBA: ALTER SERVER with a gap (p0, p2) is refused" 1 \
    "$(px -c "BEGIN" -c "ALTER SERVER pg_ratelimit OPTIONS (DROP p1, ADD p2 'host=$DIR/p1 port=5432 dbname=postgres')" -c "SELECT allowed FROM rate_limit_request('x', 'big')" -c "ROLLBACK" | grep -c 'consecutively')"

# PL/Proxy's modular_mapping takes hash mod N (any N): the proxy then routes otherwise than
# rate_limit_partition_of, request_all's check and the client. It should be refused (or followed).
part 0 -c "CREATE DATABASE third" >/dev/null
"$PG_BIN/psql" -X -q -h "$DIR/p0" -p 5432 -U postgres -d third -c "CREATE EXTENSION pg_ratelimit" >/dev/null 2>&1
px -c "SELECT rate_limit_define('mm', 1000, '1 day')" >/dev/null
"$PG_BIN/psql" -X -q -h "$DIR/p0" -p 5432 -U postgres -d third -c "SELECT rate_limit_define('mm', 1000, '1 day')" >/dev/null 2>&1
px -c "ALTER SERVER pg_ratelimit OPTIONS (ADD modular_mapping '1', ADD p2 'host=$DIR/p0 port=5432 dbname=third')" >/dev/null
misrouted=0
for g in $(seq 1 12); do
    out=$(px -c "SELECT rate_limit_partition_of('mm$g')" -c "SELECT allowed FROM rate_limit_request('mm$g', 'mm')" | tr '\n' ' ')
    case "$out" in
        *ERROR*) ;;   # refused: fine
        *) where=$(part 0 -c "SELECT count(*) FROM rate_limit_state WHERE key = 'mm$g'")$(part 1 -c "SELECT count(*) FROM rate_limit_state WHERE key = 'mm$g'")$("$PG_BIN/psql" -X -At -h "$DIR/p0" -U postgres -d third -c "SELECT count(*) FROM rate_limit_state WHERE key = 'mm$g'")
           [ "${where:${out%% *}:1}" = 1 ] || misrouted=$((misrouted + 1)) ;;
    esac
done
px -c "ALTER SERVER pg_ratelimit OPTIONS (DROP modular_mapping, DROP p2)" >/dev/null
check "DBA: with modular_mapping and 3 partitions, no key is decided where rate_limit_partition_of does not say (or refused)" 0 "$misrouted"

# rate_limit_partitions_agree: the documented way to see that partitions agree.
agn=0
for variant in "shadow => true" "storage => 'memory'" "shards => 4"; do
    name="ag$((++agn))"
    px -c "SELECT rate_limit_define('$name', 10, '1 hour')" >/dev/null
    part 1 -c "SELECT rate_limit_define('$name', 10, '1 hour', $variant)" >/dev/null
    check "DBA: rate_limit_partitions_agree is false when one partition has $variant" f "$(px -c "SELECT rate_limit_partitions_agree('$name')")"
done
RUN_DIR=$DIR cluster_stop p1
check "DBA: rate_limit_define with partition 1 down is an error naming it" 1 \
    "$(px -c "SELECT rate_limit_define('down', 5, '1 day')" | grep -c "$DIR/p1/")"
# shellcheck disable=SC2086
RUN_DIR=$DIR PG_BIN=$PG_BIN cluster_start p1 -c shared_preload_libraries=pg_ratelimit >/dev/null
check "DBA: partition 1 back, rate_limit_partitions_agree says false (not an error) for the limit it lacks" f \
    "$(px -c "SELECT rate_limit_partitions_agree('down')" | head -n 1)"
px -c "SELECT rate_limit_define('down', 5, '1 day')" >/dev/null
check "DBA: defined again, rate_limit_partitions_agree says true" t "$(px -c "SELECT rate_limit_partitions_agree('down')")"

# A key whose allowance is spent, for the restored proxy to refuse.
sw=$(key_on 0 sw)
px -c "SELECT rate_limit_request('$sw', 'cap', 10)" >/dev/null

# pg_dump of the proxy database, restored into another database: the same routing.
"$PG_BIN/pg_dump" -h "$DIR/proxy" -p 5432 -U postgres postgres >"$DIR/proxy.dump" 2>"$DIR/dump.err"
px -c "CREATE DATABASE restored" >/dev/null
"$PG_BIN/psql" -X -q -h "$DIR/proxy" -p 5432 -U postgres -d restored -f "$DIR/proxy.dump" >/dev/null 2>&1
check "DBA: pg_dump of the proxy database restores into one that routes the same" "f 1 2" \
    "$("$PG_BIN/psql" -X -q -At -h "$DIR/proxy" -p 5432 -U postgres -d restored \
         -c "SELECT allowed FROM rate_limit_request('$sw', 'cap')" -c "SELECT rate_limit_partition_of('$k1')" \
         -c "SELECT count(*) FROM rate_limit_request_many(ARRAY['$k0', '$k1'], 'big')" 2>&1 | tr '\n' ' ' | sed 's/ $//')"

echo "cases: $cases"
[ "$failures" -eq 0 ]
