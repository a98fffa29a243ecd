#!/usr/bin/env bash
# Attacks on hot-key shards (commit e3c0272), the SQL access path, pg_ratelimit.access_path and the direct
# path's SERIALIZABLE lookup that held, kept as checks (exit 1 if any stops holding). Each prints "ok: ..."
# or "FAILED: ...".
source "$(dirname "$0")/lib.sh"
setup_review review_shard_user review_shard_dbo
failures=0
check() {  # check NAME EXPECTED ACTUAL
    if [ "$2" = "$3" ]; then echo "ok: $1"; else echo "FAILED: $1: expected [$2], got [$3]"; failures=$((failures + 1)); fi
}
U() { env -u PGOPTIONS psql -X -q -At -d "$REVIEW_DB" -U review_shard_user "$@" 2>&1; }
# Decisions of a statement as "allowed/remaining" joined by commas: CALLS is a SELECT of decisions d.
decisions() { echo "SELECT string_agg((d).allowed::text || '/' || (d).remaining, ',' ORDER BY n) FROM ($1) s;"; }

# 1. pg_ratelimit.access_path: an ordinary role cannot set it (SET, set_config, ALTER ROLE SET), nor a
#    database owner for its database; YugabyteDB detection reads server_version, which nobody can change.
q -c "ALTER DATABASE $REVIEW_DB OWNER TO review_shard_dbo"
got=$(U -c "SELECT 1 FROM rate_limit_check('x')" -c "SET pg_ratelimit.access_path = sql" \
        -c "SELECT set_config('pg_ratelimit.access_path', 'sql', false)" \
        -c "ALTER ROLE review_shard_user SET pg_ratelimit.access_path = sql" | grep -c 'permission denied to set parameter')
check "an ordinary role cannot set access_path" "3" "$got"
got=$(psql -X -q -At -d "$REVIEW_DB" -U review_shard_dbo -c "ALTER DATABASE $REVIEW_DB SET pg_ratelimit.access_path = sql" 2>&1 |
      grep -c 'permission denied to set parameter')
check "a database owner cannot set access_path for its database" "1" "$got"
got=$(q_any -c "SET server_version = '15.2-YB-2.25.0.0-b0'" -c "SELECT set_config('server_version', '15.2-YB-2', false)" |
      grep -c 'cannot be changed')
check "server_version (YugabyteDB detection) cannot be spoofed" "2" "$got"

# 2. Rows the owner inserted by hand for shards that do not exist (300, -1, 32767 deep in debt, one past
#    the count) are ignored by requests and remaining, sharded or not; reset deletes them with the key.
got=$(q <<SQL
SELECT rate_limit_define('junk', rate => 4, period => '1000 days', shards => 2);
SELECT rate_limit_define('junk1', rate => 4, period => '1000 days');
INSERT INTO rate_limit_state VALUES ('junk', 'k', 300, 0, now()), ('junk', 'k', -1, 0, now()),
    ('junk', 'k', 2, 0, now()), ('junk', 'k', 32767, -1e12, now()),
    ('junk1', 'k', 300, 0, now()), ('junk1', 'k', -1, 0, now()), ('junk1', 'k', 1, 0, now());
$(decisions "SELECT n, rate_limit_request('k', 'junk') AS d FROM generate_series(1, 5) n")
$(decisions "SELECT n, rate_limit_request('k', 'junk1') AS d FROM generate_series(1, 5) n")
SELECT rate_limit_reset('k', 'junk');
SELECT count(*) FROM rate_limit_state WHERE limit_name = 'junk';
SQL
)
check "rows of shards that do not exist are ignored; reset removes them" \
      "$(printf '\n\ntrue/3,true/2,true/1,true/0,false/0\ntrue/3,true/2,true/1,true/0,false/0\n\n0')" "$got"

# 3. A cost above one shard's capacity is refused (22023) for request, reserve, check and refund alike.
got=$(q_any -c "SELECT rate_limit_define('big', rate => 10, period => '1 hour', shards => 4)" \
            -c "SELECT rate_limit_request('k', 'big', 3)" -c "SELECT rate_limit_request('k', 'big', 3, true)" \
            -c "SELECT rate_limit_check('k', 'big', 3)" -c "SELECT rate_limit_refund('k', 'big', 3)" \
            -c "SELECT (rate_limit_request('k', 'big', 2.5)).allowed" | grep -c -e 'exceeds the capacity 2.5 of one of the 4 shards' -e '^t$')
check "cost above one shard's capacity refused everywhere, equal to it admitted" "5" "$got"

# 4. Switching pg_ratelimit.access_path between the statements of one transaction, with savepoints, at
#    each isolation level: the key admits exactly its allowance and a rollback gives everything back.
#    (Two shards of 2.5 units each admit 2 unit requests each: 4 of the sharded limit's 5.)
for level in 'READ COMMITTED' 'REPEATABLE READ' 'SERIALIZABLE'; do
    both="SELECT count(*) FILTER (WHERE (rate_limit_request('k', 'sw')).allowed) || '+' ||
                 count(*) FILTER (WHERE (rate_limit_request('k', 'sw1')).allowed) FROM generate_series(1, N)"
    got=$(q <<SQL | grep '|' | grep -v '^|$'
SELECT rate_limit_define('sw', rate => 5, period => '1000 days', shards => 2);
SELECT rate_limit_define('sw1', rate => 5, period => '1000 days');
BEGIN ISOLATION LEVEL $level;
SET LOCAL pg_ratelimit.access_path = direct;
SELECT 'direct', (${both/N/2});
SET LOCAL pg_ratelimit.access_path = sql;
SAVEPOINT a;
SELECT 'sql rolled back', (${both/N/2});
ROLLBACK TO a;
SELECT 'sql', (${both/N/2});
SET LOCAL pg_ratelimit.access_path = direct;
SELECT 'direct again', (${both/N/4});
COMMIT;
SELECT 'held', string_agg(limit_name || '=' || round(value::numeric, 3), ',' ORDER BY limit_name, shard)
  FROM rate_limit_state WHERE limit_name LIKE 'sw%';
BEGIN ISOLATION LEVEL $level;
SELECT rate_limit_reset('k', 'sw'), rate_limit_reset('k', 'sw1');
SET LOCAL pg_ratelimit.access_path = sql;
SELECT 'after reset', (${both/N/3});
ROLLBACK;
SELECT 'rolled back', string_agg(limit_name || '=' || round(value::numeric, 3), ',' ORDER BY limit_name, shard)
  FROM rate_limit_state WHERE limit_name LIKE 'sw%';
SELECT rate_limit_drop('sw'), rate_limit_drop('sw1');
SQL
    )
    check "access path switched mid-transaction ($level)" \
          "$(printf 'direct|2+2\nsql rolled back|2+2\nsql|2+2\ndirect again|0+1\nheld|sw=0.500,sw=0.500,sw1=0.000\nafter reset|3+3\nrolled back|sw=0.500,sw=0.500,sw1=0.000')" \
          "$got"
done

# 5. Rules and forced row-level security on rate_limit_state are refused (55000) on both paths, for
#    requests, reset and cleanup, before anything is written.
got=$(q_any <<'SQL'
CREATE TABLE rule_sink (limit_name text, key text);
CREATE RULE r AS ON UPDATE TO rate_limit_state DO ALSO INSERT INTO rule_sink VALUES (NEW.limit_name, NEW.key);
SET pg_ratelimit.access_path = direct; SELECT rate_limit_request('r');
SET pg_ratelimit.access_path = sql; SELECT rate_limit_request('r'); SELECT rate_limit_reset('r');
DROP RULE r ON rate_limit_state;
ALTER TABLE rate_limit_state ENABLE ROW LEVEL SECURITY, FORCE ROW LEVEL SECURITY;
CREATE POLICY p ON rate_limit_state USING (false);
SET pg_ratelimit.access_path = direct; SELECT rate_limit_request('r');
SET pg_ratelimit.access_path = sql; SELECT rate_limit_request('r'); SELECT rate_limit_cleanup();
DROP POLICY p ON rate_limit_state;
ALTER TABLE rate_limit_state NO FORCE ROW LEVEL SECURITY, DISABLE ROW LEVEL SECURITY;
SELECT 'rows', count(*) FROM rate_limit_state WHERE key = 'r';
SQL
)
check "rules and forced RLS refused on both paths" "6 rows|0" \
      "$(grep -c -e 'it has rules' -e 'it forces row-level security' <<<"$got") $(grep '^rows|' <<<"$got")"

# 6. A sharded fixed window with a start: each window admits exactly rate (whole units per shard), the
#    denial waits exactly until the next window, and remaining counts all shards.
got=$(q <<'SQL'
SET pg_ratelimit.fake_now = '2026-01-01 00:10:00+00';
SELECT rate_limit_define('fw', rate => 8, period => '1 hour', algorithm => 'fixed_window',
                         start => '2026-01-01 00:00:00+00', shards => 4);
SELECT 'window', string_agg((d).allowed::text, ',' ORDER BY n) FROM (SELECT n, rate_limit_request('k', 'fw') AS d FROM generate_series(1, 9) n) s;
SELECT 'denied', allowed, remaining, retry_after, reset_after FROM rate_limit_request('k', 'fw');
SET pg_ratelimit.fake_now = '2026-01-01 01:00:00+00';
SELECT 'next window', allowed, remaining FROM rate_limit_request('k', 'fw');
SQL
)
check "sharded fixed window with start" \
      "$(printf 'window|true,true,true,true,true,true,true,true,false\ndenied|f|0|00:50:00|00:50:00\nnext window|t|7')" "$(grep '|' <<<"$got")"

# 7. Sharded reservations: the key's debt never exceeds max_reserved (split over the shards), and
#    refunds cancel them.
got=$(q <<'SQL'
SET pg_ratelimit.fake_now = '2026-01-01 00:00:00+00';
SELECT rate_limit_define('res', rate => 4, period => '1 day', max_reserved => 4, shards => 2);
SELECT 'reserved', count(*) FILTER (WHERE (d).allowed) FROM (SELECT rate_limit_request('k', 'res', 1, true) AS d FROM generate_series(1, 12)) s;
SELECT 'held', round(sum(value)::numeric, 6) FROM rate_limit_state WHERE limit_name = 'res';
SELECT 'refunds', count(*) FROM (SELECT rate_limit_refund('k', 'res', 2) FROM generate_series(1, 2)) s;
SELECT 'held', round(sum(value)::numeric, 6) FROM rate_limit_state WHERE limit_name = 'res';
SQL
)
check "sharded reservations bounded by max_reserved" "$(printf 'reserved|8\nheld|-4.000000\nrefunds|2\nheld|0.000000')" "$(grep '|' <<<"$got")"

# 8. A prepared transaction holding a shard's row: on the direct path, which sees the shard busy, other
#    sessions' requests on the key dodge it (no wait, no failure) and never exceed the allowance; ROLLBACK
#    PREPARED gives its units back. (The SQL path sees the prepared transaction from the row's xmax too;
#    this check pins the direct path, which sees it on the tuple.)
got=$(q_any <<'SQL'
SELECT rate_limit_define('prep', rate => 6, period => '1000 days', shards => 2);
SELECT count(*) FROM (SELECT rate_limit_request('k', 'prep') FROM generate_series(1, 2)) s;
SELECT count(*) FROM (SELECT rate_limit_refund('k', 'prep') FROM generate_series(1, 2)) s;
SET pg_ratelimit.access_path = direct;
BEGIN; SELECT (rate_limit_request('k', 'prep', 2)).allowed; PREPARE TRANSACTION 'review_shards';
SET lock_timeout = '2s';
SELECT 'others', count(*) FILTER (WHERE (d).allowed) FROM (SELECT rate_limit_request('k', 'prep', 1) AS d FROM generate_series(1, 3)) s;
ROLLBACK PREPARED 'review_shards';
SELECT 'after', remaining FROM rate_limit_check('k', 'prep');
SQL
)
if grep -q 'prepared transactions are disabled' <<<"$got"; then
    echo "(max_prepared_transactions = 0: check 8 not run)"
else
    check "prepared transaction on a shard" "$(printf 'others|3\nafter|2')" "$(grep -e '^others|' -e '^after|' <<<"$got")"
fi

# 9. Both access paths at once on one key (one pgbench per path), at each isolation level, sharded and
#    not: the units admitted (each recorded by its committed transaction) plus what the key's rows still
#    hold are exactly the allowance; one row gives all of it out; no transaction fails.
if command -v pgbench >/dev/null; then
    bench=$(mktemp)
    echo "INSERT INTO admitted SELECT 1 FROM rate_limit_request('hot', 'mix') WHERE allowed;" >"$bench"
    for level in read_committed repeatable_read serializable; do
        for shards in 1 8; do
            q -c "DROP TABLE IF EXISTS admitted" -c "CREATE TABLE admitted (n int)" \
              -c "SELECT rate_limit_define('mix', rate => 200, period => '1000 days', shards => $shards)" \
              -c "SELECT rate_limit_reset('hot', 'mix')" >/dev/null 2>&1
            pids=()
            for path in direct sql; do
                PGOPTIONS="-c pg_ratelimit.access_path=$path -c default_transaction_isolation=${level/_/\\ }" \
                    pgbench -n -d "$REVIEW_DB" -f "$bench" -c 3 -t 100 --max-tries=1000 >"$bench.$path" 2>&1 &
                pids+=($!)
            done
            wait "${pids[@]}"
            processed=$(cat "$bench.direct" "$bench.sql" | grep -c 'actually processed: 300/300')
            got=$(q -c "SELECT (SELECT count(*) FROM admitted) || ' ' || round((SELECT count(*) FROM admitted) + coalesce(sum(value), 0))
                          FROM rate_limit_state WHERE limit_name = 'mix' AND key = 'hot'")
            admitted=${got% *}
            total=${got#* }
            check "mixed access paths on one key ($level, $shards shard(s)): admitted + held = allowance" \
                  "200 2" "$total $processed"
            [ "$shards" -eq 1 ] && check "one row gives out the whole allowance ($level)" "200" "$admitted"
            echo "   ($level, $shards shard(s): $admitted admitted)"
        done
    done
    rm -f "$bench" "$bench.direct" "$bench.sql"
else
    echo "(pgbench not found: check 9 not run)"
fi

if [ $failures -gt 0 ]; then reproduced "$failures held attack(s) no longer hold"; fi
holds "every attack on shards, the SQL path, the access path setting and the direct path's lookup held"
