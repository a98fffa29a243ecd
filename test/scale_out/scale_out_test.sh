#!/usr/bin/env bash
# Keys spread over partitions, against scripts/cluster.sh with 2 and 4 partitions, two ways:
# - through PL/Proxy (proxy/pg_ratelimit_proxy.sql): exact admission under 8 clients on one key; 10,000
#   keys each stored on exactly the partition the hash names; definitions identical everywhere;
#   rate_limit_request_many's positions; memory storage and shards; NULL keys; RL001's DETAIL intact; a
#   partition stopped and started again (only its keys fail, clearly; recovery without action); and the
#   non-transactional behaviour the docs state (a ROLLBACK on the proxy keeps what the partitions consumed);
# - through the C++ client's routing (Options::partitions; test/scale_out/client_routing_test.cpp, the
#   CMake build's scale_out_tests): its hash against the server's hashtext on 20,000 keys and against the
#   proxy's placement, the same checks, in-transaction calls and request_all on one partition only, and a
#   partition stopped and started under a Limiter.
# Prints "ok: ..." per check and "cases: N"; exits non-zero on any failure.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
source "$here/../../scripts/common.sh"
cases=0
failures=0
check() {  # check NAME EXPECTED ACTUAL
    if [ "$2" = "$3" ]; then echo "ok: $1"; cases=$((cases + 1)); else echo "FAILED: $1: expected [$2], got [$3]"; failures=$((failures + 1)); fi
}
TESTS=${SCALE_OUT_TESTS:-$ROOT/build/test/scale_out/scale_out_tests}
[ -x "$TESTS" ] || die "no $TESTS: build the CMake tree with the tests first (cmake -S . -B build -DPG_RATELIMIT_BUILD_TESTS=ON)"
DIR=$(mktemp -d "${TMPDIR:-/tmp}/pg_ratelimit_scale_out.XXXXXX")
trap '"$ROOT/scripts/cluster.sh" stop "$DIR" >/dev/null 2>&1; rm -rf "$DIR"' EXIT
ensure_packages "${PACKAGES[@]}"

for N in 2 4; do
    log "PL/Proxy with $N partitions"
    "$ROOT/scripts/cluster.sh" stop "$DIR" >/dev/null 2>&1
    rm -rf "$DIR" && mkdir -p "$DIR"
    "$ROOT/scripts/cluster.sh" start "$N" "$DIR" >"$DIR.start.log" 2>&1 || { cat "$DIR.start.log"; exit 1; }
    PG_BIN=$(sed -n 's/^PG_BIN=//p' "$DIR.start.log")
    px() { "$PG_BIN/psql" -X -q -At -h "$DIR/proxy" -p 5432 -U postgres -d postgres "$@" 2>&1; }
    part() { local k=$1; shift; "$PG_BIN/psql" -X -q -At -h "$DIR/p$k" -p 5432 -U postgres -d postgres "$@" 2>&1; }

    # Definitions everywhere, and agreeing.
    px -c "SELECT rate_limit_define('exact', 50, '1 day')" -c "SELECT rate_limit_define('spread', 1000, '1 day')" \
       -c "SELECT rate_limit_define('mem', 5, '1 day', storage => 'memory')" \
       -c "SELECT rate_limit_define('hot', 40, '1 day', shards => 4)" >/dev/null
    defined=$(for ((k = 0; k < N; k++)); do part "$k" -c "SELECT string_agg(name || ':' || rate || ':' || storage || ':' || shards, ',' ORDER BY name) FROM rate_limit_config"; done | sort -u | wc -l)
    check "N=$N: rate_limit_define reached every partition with the same definitions" 1 "$defined"
    check "N=$N: rate_limit_partitions_agree" t "$(px -c "SELECT rate_limit_partitions_agree('exact')")"

    # 8 clients on one key through the proxy: exactly the allowance admitted.
    px -c "CREATE TABLE admitted (n int)" >/dev/null
    cat >"$DIR/hot.sql" <<'SQL'
INSERT INTO admitted SELECT 1 WHERE (rate_limit_request('one key', 'exact')).allowed;
SQL
    "$PG_BIN/pgbench" -n -c 8 -j 2 -t 20 -f "$DIR/hot.sql" -h "$DIR/proxy" -p 5432 -U postgres postgres >"$DIR/pgbench.log" 2>&1 ||
        { tail "$DIR/pgbench.log"; check "N=$N: pgbench ran" 0 1; }
    check "N=$N: 8 clients x 20 requests on one key: exactly the allowance (50) admitted" 50 "$(px -c 'SELECT count(*) FROM admitted')"

    # 10,000 keys: each stored on exactly one partition, the one rate_limit_partition_of names.
    px -c "SELECT count(*) FROM rate_limit_request_many(array(SELECT 'k' || g FROM generate_series(1, 10000) g), 'spread')" >/dev/null
    misplaced=0
    total=0
    for ((k = 0; k < N; k++)); do
        part "$k" -At -c "SELECT key FROM rate_limit_state WHERE limit_name = 'spread'" >"$DIR/keys.$k"
        total=$((total + $(wc -l <"$DIR/keys.$k")))
        expected_here=$(px -c "SELECT count(*) FROM unnest(array(SELECT 'k' || g FROM generate_series(1, 10000) g)) key WHERE rate_limit_partition_of(key) = $k")
        check "N=$N: partition $k holds exactly the keys the hash names ($expected_here)" "$expected_here" "$(wc -l <"$DIR/keys.$k")"
    done
    check "N=$N: 10,000 keys, each on exactly one partition" 10000 "$total"

    # rate_limit_request_many: one row per key, the caller's positions, duplicates in turn, costs.
    many=$(px -c "SELECT string_agg(key || '@' || position || '=' || remaining, ' ' ORDER BY position)
                  FROM rate_limit_request_many(ARRAY['m1', 'm2', 'm1', 'm3', 'm2', 'm1'], 'exact', ARRAY[1, 2, 3, NULL, 5, 1])")
    check "N=$N: rate_limit_request_many keeps the caller's positions and decides duplicates in turn" \
        "m1@1=49 m2@2=48 m1@3=46 m3@4=49 m2@5=43 m1@6=45" "$many"
    check "N=$N: rate_limit_request_many with NULL costs" 2 "$(px -c "SELECT count(*) FROM rate_limit_request_many(ARRAY['n1', 'n2'], 'exact')")"

    # Memory storage and shards through the proxy.
    check "N=$N: a memory limit through the proxy admits its allowance" 5 \
        "$(px -c "SELECT count(*) FILTER (WHERE (rate_limit_request('m', 'mem')).allowed) FROM generate_series(1, 8)")"
    check "N=$N: a sharded limit through the proxy admits its allowance" 40 \
        "$(px -c "SELECT count(*) FILTER (WHERE (rate_limit_request('h', 'hot')).allowed) FROM generate_series(1, 60)")"

    # NULL keys and RL001.
    check "N=$N: a NULL key is 22004" 22004 "$(px -v VERBOSITY=sqlstate -c "SELECT rate_limit_request(NULL, 'exact')" | sed -n 's/.*\(22004\).*/\1/p' | head -n 1)"
    px -c "SELECT rate_limit_define('tiny', 1, '1 day')" -c "SELECT rate_limit_request('t', 'tiny')" >/dev/null
    enforce=$(px -v VERBOSITY=verbose -c "SELECT rate_limit_enforce('t', 'tiny')")
    check "N=$N: rate_limit_enforce raises RL001 on the proxy" 1 "$(grep -c '^ERROR:  RL001: rate limit "tiny" exceeded for key "t"' <<<"$enforce")"
    detail=$(sed -n 's/^DETAIL:  //p' <<<"$enforce")
    check "N=$N: its DETAIL is the single node's JSON and parses" 'tiny|t|t' \
        "$(px -c "SELECT d->>'limit', d->>'key', (d->>'retry_after')::numeric > 86000 FROM (SELECT '$detail'::jsonb d) x" | tr -d ' ')"

    # Not transactional: a ROLLBACK on the proxy keeps what a partition consumed.
    px -c "BEGIN" -c "SELECT rate_limit_request('rb', 'tiny')" -c "ROLLBACK" >/dev/null
    check "N=$N: a ROLLBACK on the proxy keeps the units a partition consumed (documented)" f \
        "$(px -c "SELECT allowed FROM rate_limit_check('rb', 'tiny')")"

    # Leases and request_all across partitions: refused clearly.
    check "N=$N: rate_limit_acquire is refused (0A000)" 1 "$(px -v VERBOSITY=sqlstate -c "SELECT rate_limit_acquire('a', 'exact')" | grep -c 0A000)"
    spread_keys=$(px -c "SELECT string_agg(quote_literal(k), ',') FROM (SELECT DISTINCT ON (rate_limit_partition_of(k)) k FROM unnest(array(SELECT 'r' || g FROM generate_series(1, 50) g)) k ORDER BY rate_limit_partition_of(k), k LIMIT 2) x")
    check "N=$N: rate_limit_request_all across partitions is refused (0A000)" 1 \
        "$(px -v VERBOSITY=sqlstate -c "SELECT * FROM rate_limit_request_all(ARRAY[$spread_keys], ARRAY['exact', 'exact'])" | grep -c 0A000)"

    # A partition down: its keys fail clearly, the others' work; it comes back without any action.
    down_key=$(px -c "SELECT k FROM unnest(array(SELECT 'd' || g FROM generate_series(1, 50) g)) k WHERE rate_limit_partition_of(k) = 0 LIMIT 1")
    up_key=$(px -c "SELECT k FROM unnest(array(SELECT 'd' || g FROM generate_series(1, 50) g)) k WHERE rate_limit_partition_of(k) = 1 LIMIT 1")
    RUN_DIR=$DIR cluster_stop p0
    down=$(px -c "SELECT allowed FROM rate_limit_request('$down_key', 'exact')")
    check "N=$N: with partition 0 down, its keys fail with a connection error naming it" yes \
        "$(grep -q -i "connection to server on socket \"$DIR/p0/" <<<"$down" && echo yes || echo "no: $down")"
    check "N=$N: with partition 0 down, the other partitions' keys work" t "$(px -c "SELECT allowed FROM rate_limit_request('$up_key', 'exact')")"
    # shellcheck disable=SC2086
    RUN_DIR=$DIR PG_BIN=$PG_BIN cluster_start p0 -c shared_preload_libraries=pg_ratelimit >/dev/null
    check "N=$N: partition 0 restarted: its keys work again, no action on the proxy" t \
        "$(px -c "SELECT allowed FROM rate_limit_request('$down_key', 'exact')")"

    # The C++ client's routing on the same cluster and limits (fresh keys of its own).
    partitions=$(for ((k = 0; k < N; k++)); do echo "host=$DIR/p$k port=5432 user=postgres dbname=postgres"; done)
    control="source '$ROOT/scripts/common.sh'; RUN_DIR='$DIR'; PG_BIN='$PG_BIN'"
    PG_RATELIMIT_PARTITIONS=$partitions PG_RATELIMIT_PROXY="host=$DIR/proxy port=5432 user=postgres dbname=postgres" \
        PG_RATELIMIT_STOP_PARTITION0="bash -c \"$control; cluster_stop p0\" >/dev/null" \
        PG_RATELIMIT_START_PARTITION0="bash -c \"$control; cluster_start p0 -c shared_preload_libraries=pg_ratelimit\" >/dev/null" \
        "$TESTS" >"$DIR.client.log" 2>&1
    client_status=$?
    grep -E '^\[ +(OK|FAILED) +\]' "$DIR.client.log" | sed "s/^/    N=$N client: /"
    [ $client_status -eq 0 ] || tail -n 40 "$DIR.client.log"
    check "N=$N: the C++ client's routing: every test of scale_out_tests passed" "0 $("$TESTS" --gtest_list_tests | grep -c '^  ')" \
        "$client_status $(grep -c '^\[       OK \]' "$DIR.client.log")"
    cases=$((cases + $(grep -c '^\[       OK \]' "$DIR.client.log") - 1))

    # Re-sharding as docs/scale-out.md describes it: the proxy's server altered from 4 partitions to 2 and
    # back. PL/Proxy rereads the cluster's options at once; a key of partition 3 moves to partition 1 and
    # starts full there, its state left behind on partition 3, which it finds again after the way back.
    if [ "$N" = 4 ]; then
        moved=$(px -c "SELECT k FROM unnest(array(SELECT 'reshard' || g FROM generate_series(1, 100) g)) k WHERE rate_limit_partition_of(k) = 3 LIMIT 1")
        px -c "SELECT rate_limit_request('$moved', 'exact', 30)" >/dev/null
        left_before=$(px -c "SELECT remaining FROM rate_limit_check('$moved', 'exact')")
        px -c "ALTER SERVER pg_ratelimit OPTIONS (DROP p2, DROP p3)" >/dev/null
        check "N=4 -> 2: the proxy routes by the new count at once (partition 1)" 1 "$(px -c "SELECT rate_limit_partition_of('$moved')")"
        check "N=4 -> 2: a moved key starts full on its new partition (49 left after a check of 1)" 49 \
            "$(px -c "SELECT remaining FROM rate_limit_check('$moved', 'exact')")"
        px -c "ALTER SERVER pg_ratelimit OPTIONS (ADD p2 'host=$DIR/p2 port=5432 dbname=postgres', ADD p3 'host=$DIR/p3 port=5432 dbname=postgres')" >/dev/null
        check "N=2 -> 4: back on partition 3, the key finds the state it left there (19 after a check of 1)" "19 19" \
            "$left_before $(px -c "SELECT remaining FROM rate_limit_check('$moved', 'exact')")"
    fi

    px -c "SELECT rate_limit_drop(n) FROM unnest(ARRAY['exact', 'spread', 'mem', 'hot', 'tiny']) n" >/dev/null
    left=$(for ((k = 0; k < N; k++)); do part "$k" -c "SELECT count(*) FROM rate_limit_config WHERE name <> 'default'"; done | sort -u | tr '\n' ' ')
    check "N=$N: rate_limit_drop reached every partition" "0 " "$left"
done
echo "cases: $cases"
[ "$failures" -eq 0 ]
