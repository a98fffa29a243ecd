#!/usr/bin/env bash
# Attacks on the storage modes (durable, unlogged, memory) and rate_limit_request_many that held in the
# nineteenth review (issue 10's end, 1cd3534: memory batches decided without sorting), kept as checks (exit
# 1 if any stops holding). Each prints "ok: ..." or "FAILED: ...". On a cluster of its own (own_cluster.sh:
# it restarts, crashes and edits the memory save file), with pg_ratelimit.memory_keys at its lower bound.
here=$(dirname "$0")
REVIEW_DB=postgres
source "$here/lib.sh"
source "$here/own_cluster.sh"
OPTIONS="-c pg_ratelimit.memory_keys=1000 -c max_prepared_transactions=2"
# shellcheck disable=SC2086
own_cluster_start $OPTIONS
export PGDATABASE=postgres PGOPTIONS="-c client_min_messages=error"
failures=0
check() {  # check NAME EXPECTED ACTUAL
    if [ "$2" = "$3" ]; then echo "ok: $1"; else echo "FAILED: $1: expected [$2], got [$3]"; failures=$((failures + 1)); fi
}
p() { psql -X -q -At -v VERBOSITY=sqlstate "$@" 2>&1; }
U() { p -U review_storage2_user "$@"; }
left() { p -c "SELECT (rate_limit_check('$1', '$2')).remaining + 1"; }
save_file=$OWN_DIR/data/pg_stat/pg_ratelimit_memory.state
restart() {  # restart MODE [command run while the server is down] (the server then preloads pg_ratelimit)
    local mode=$1
    shift
    "${OWN_AS_SERVER[@]}" pg_ctl -D "$OWN_DIR/data" -m "$mode" -w stop >/dev/null 2>&1
    [ $# -eq 0 ] || "$@"
    "${OWN_AS_SERVER[@]}" pg_ctl -D "$OWN_DIR/data" -l "$SERVER_LOG" -w -t 60 \
        -o "-c listen_addresses='' -c unix_socket_directories='$OWN_DIR' -p 5432 -c shared_preload_libraries=pg_ratelimit $OPTIONS ${START_OPTIONS:-}" \
        start >/dev/null || { tail "$SERVER_LOG"; echo "the server did not start"; exit 2; }
}
p -c "CREATE ROLE review_storage2_user LOGIN" -c "CREATE EXTENSION pg_ratelimit" \
  -c "SELECT count(rate_limit_define('ro_' || s, 10, '1 day', storage => s)) FROM unnest(ARRAY['durable', 'unlogged', 'memory']) s" >/dev/null

# 1. Read-only transactions (default_transaction_read_only, as a standby-like pooler sets it): on durable and
#    unlogged limits every function that writes a key fails with 25006 and rate_limit_check works; on a
#    memory limit every function works (the README's table).
calls=("rate_limit_request('k', 'L')" "rate_limit_request_many(ARRAY['k', 'j', 'k'], 'L')"
       "rate_limit_request_all(ARRAY['k'], ARRAY['L'])" "rate_limit_throttle('k', 'L')" "rate_limit_enforce('k', 'L')"
       "rate_limit_request('k', 'L', 1, true)" "rate_limit_settle('k', 'L', 1, 2)" "rate_limit_refund('k', 'L')"
       "rate_limit_reset('k', 'L')" "rate_limit_check('k', 'L')")
for storage in durable unlogged memory; do
    p -c "SELECT count(*) FROM rate_limit_request_many(ARRAY['k', 'j'], 'ro_$storage')" >/dev/null
    got=$(for call in "${calls[@]}"; do
        PGOPTIONS="$PGOPTIONS -c default_transaction_read_only=on" p -c "SELECT 'rows', count(*) FROM ${call//L/ro_$storage}"
    done | sed 's/^rows|.*/ok/' | sort | uniq -c | tr -s ' \n' ' ')
    if [ $storage = memory ]; then
        check "read-only transactions, memory: all 10 calls work" " 10 ok " "$got"
    else
        check "read-only transactions, $storage: the 9 calls that write refused (25006), rate_limit_check works" " 9 ERROR: 25006 1 ok " "$got"
    fi
done

# 2. The memory settings: bounds refused, a session cannot change either, ALTER SYSTEM needs a superuser;
#    at memory_keys = 1000 the table holds 1792 keys (2048 slots at 7/8) and, under memory_eviction = none,
#    a flood of 2,000 new keys fills it exactly and is refused the rest with 53400 (no internal error).
got=$(p -c "ALTER SYSTEM SET pg_ratelimit.memory_keys = 999" -c "ALTER SYSTEM SET pg_ratelimit.memory_keys = 100000001" \
        -c "ALTER SYSTEM SET pg_ratelimit.memory_eviction = 'sometimes'" | tr '\n' ' ')
check "memory settings out of bounds are refused" "ERROR:  22023 ERROR:  22023 ERROR:  22023 " "$got"
got=$(U -c "ALTER SYSTEM SET pg_ratelimit.memory_eviction = none" -c "SET pg_ratelimit.memory_eviction = none" \
        -c "SELECT set_config('pg_ratelimit.memory_keys', '5000', false)" | tr '\n' ' ')
check "an ordinary role changes neither memory setting" "ERROR:  42501 ERROR:  55P02 ERROR:  55P02 " "$got"
p -c "ALTER SYSTEM SET pg_ratelimit.memory_eviction = none" -c "SELECT pg_reload_conf()" >/dev/null
sleep 1
p -c "SELECT rate_limit_define('flood', 1, '1 day', storage => 'memory')" >/dev/null
held=$(p -c "SELECT entries FROM rate_limit_memory_usage()")  # keys of check 1
got=$(p <<'SQL'
CREATE FUNCTION pg_temp.flood() RETURNS text LANGUAGE plpgsql AS $$
DECLARE refused int := 0; admitted int := 0; BEGIN
    FOR i IN 1..2000 LOOP
        BEGIN
            IF (rate_limit_request('f' || i, 'flood')).allowed THEN admitted := admitted + 1; END IF;
        EXCEPTION WHEN SQLSTATE '53400' THEN refused := refused + 1;
        END;
    END LOOP;
    RETURN admitted || '|' || refused;
END $$;
SELECT pg_temp.flood();
SELECT entries || '|' || capacity FROM rate_limit_memory_usage();
SQL
)
check "memory_keys = 1000 holds 1792 keys: the new keys that fit admitted, the rest refused (53400) under none" \
      "$((1792 - held))|$((208 + held)) 1792|1792" "$(tr '\n' ' ' <<<"$got" | sed 's/ *$//')"
p -c "SELECT rate_limit_drop('flood')" -c "ALTER SYSTEM RESET pg_ratelimit.memory_eviction" -c "SELECT pg_reload_conf()" >/dev/null
sleep 1

# 3. Duplicated keys near capacity under concurrency: 8 sessions each batch 30 copies of one memory key
#    (capacity 100) and 15 pairs of two keys in crossing orders: exactly 100 admitted per key, no deadlock,
#    no error.
p -c "SELECT rate_limit_define('dup', 100, '1000 days', storage => 'memory')" >/dev/null
tmp=$(mktemp -d)
for i in 1 2 3 4 5 6 7 8; do
    if [ $((i % 2)) -eq 0 ]; then pair="ARRAY['a', 'b']"; else pair="ARRAY['b', 'a']"; fi
    U -c "SET statement_timeout = '20s'" \
      -c "SELECT key, count(*) FILTER (WHERE allowed) FROM rate_limit_request_many(array_fill('hot'::text, ARRAY[30]) ||
            ARRAY(SELECT unnest($pair) FROM generate_series(1, 15)), 'dup') GROUP BY key" >"$tmp/$i" &
done
wait
got=$(cat "$tmp"/* | awk -F'|' '/\|/ { n[$1] += $2; next } { print "error: " $0 } END { printf "a=%d b=%d hot=%d", n["a"], n["b"], n["hot"] }')
rm -rf "$tmp"
check "8 sessions: duplicated and crossing keys in memory batches admit exactly the capacity" "a=100 b=100 hot=100" "$got"

# 4. A memory batch mixing keys with and without an override: each key gets its own allowance.
got=$(p -c "SELECT rate_limit_define('tier', 5, '1 day', storage => 'memory')" -c "SELECT rate_limit_override('vip', 'tier', rate => 50)" \
        -c "SELECT string_agg(key || '=' || n, ' ' ORDER BY key) FROM (SELECT key, count(*) FILTER (WHERE allowed) n
              FROM rate_limit_request_many(ARRAY(SELECT CASE WHEN g % 2 = 0 THEN 'vip' ELSE 'plain' END FROM generate_series(1, 200) g), 'tier')
             GROUP BY key) s" | tail -n 1)
check "a memory batch decides each key under its own override" "plain=5 vip=50" "$got"

# 5. A shadow memory limit in a batch: every call allowed, those beyond the capacity flagged, and nothing
#    beyond the capacity consumed (a later enforcing definition finds the key exhausted, not in debt).
got=$(p -c "SELECT rate_limit_define('watch', 5, '1 day', storage => 'memory', shadow => true)" \
        -c "SELECT count(*) FILTER (WHERE allowed) || '|' || count(*) FILTER (WHERE shadow_denied) FROM rate_limit_request_many(array_fill('s'::text, ARRAY[20]), 'watch')" \
        -c "SELECT rate_limit_define('watch', 5, '1 day', storage => 'memory')" \
        -c "SELECT (rate_limit_request('s', 'watch')).allowed" | tr -s '\n' ' ')
check "a shadow memory batch: 20 allowed, 15 flagged, the key exhausted but not in debt" " 20|15 f " "$got"

# 6. rate_limit_request_all across storages: a durable limit that denies leaves the memory triple untouched.
got=$(p -c "SELECT rate_limit_define('all_m', 5, '1 day', storage => 'memory')" -c "SELECT rate_limit_define('all_d', 1, '1 day')" \
        -c "SELECT (rate_limit_request('k', 'all_d')).allowed" \
        -c "SELECT allowed FROM rate_limit_request_all(ARRAY['k', 'k'], ARRAY['all_m', 'all_d']) WHERE position = 0" | tr -s '\n' ' ')
check "request_all: a durable denial consumes nothing of the memory triple" " t f |5" "$got|$(left k all_m)"

# 7. Concurrency limits (leases) keep no state in a table or in memory: storage other than durable refused.
got=$(p -c "SELECT rate_limit_define('lease_' || s, 2, '1 hour', algorithm => 'concurrency', storage => s) FROM unnest(ARRAY['memory', 'unlogged']) s" | tr '\n' ' ')
check "a concurrency limit with memory or unlogged storage is refused (22023)" "ERROR:  22023 " "$got"

# 8. Restarts: a clean restart keeps memory and unlogged state; an immediate stop, and a crash restart after a
#    backend's SIGKILL, start memory and unlogged keys full and keep durable ones.
burn() { p -c "SELECT count(*) FROM unnest(ARRAY['ro_durable', 'ro_unlogged', 'ro_memory']) l, LATERAL rate_limit_request_many(ARRAY['r', 'r', 'r'], l)" >/dev/null; }
states() { echo "$(left r ro_durable)|$(left r ro_unlogged)|$(left r ro_memory)"; }
burn
restart fast
check "a clean restart keeps every storage's state (durable|unlogged|memory)" "7|7|7" "$(states)"
restart immediate
check "an immediate stop: unlogged and memory keys start full" "7|10|10" "$(states)"
burn
p -c "SELECT pg_sleep(10)" >/dev/null &
sleeper=$!
victim=
for _ in $(seq 1 50); do
    victim=$(p -c "SELECT pid FROM pg_stat_activity WHERE query = 'SELECT pg_sleep(10)'")
    [ -n "$victim" ] && break
    sleep 0.1
done
kill -9 "$victim"
wait "$sleeper"
for _ in $(seq 1 60); do [ "$(p -c "SELECT 1")" = 1 ] && break; sleep 0.5; done
check "a crash restart (SIGKILL of a backend): unlogged and memory keys start full, durable kept" "4|10|10" "$(states)"

# 9. The save file: truncated in the middle of an entry, the entries before it are loaded; of another
#    layout (entry size), nothing is loaded; random bytes after the header, nothing, and no crash; each
#    says so in the log. (The table then holds only what was loaded: every other key of check 8 and
#    before is in the file too.)
p -c "SELECT rate_limit_define('saved', 10, '1 day', storage => 'memory')" \
  -c "SELECT count(*) FROM rate_limit_request_many(ARRAY(SELECT 'k' || g FROM generate_series(1, 20) g), 'saved')" >/dev/null
loaded() { p -c "SELECT entries FROM rate_limit_memory_usage()"; }
entry_bytes=
truncate_file() {
    local size
    size=$(stat -c %s "$save_file")
    entry_bytes=$(od -An -tu4 -j4 -N4 "$save_file" | tr -d ' ')
    truncate -s $((8 + entry_bytes * 5 + entry_bytes / 2)) "$save_file"
    [ "$size" -gt $((8 + entry_bytes * 6)) ] || echo "the save file is smaller than expected: $size bytes"
}
logged_before=$(grep -c 'is incomplete or of another version' "$SERVER_LOG")
restart fast truncate_file
check "a save file truncated in its 6th entry: its first 5 entries loaded" "5" "$(loaded)"
p -c "SELECT count(*) FROM rate_limit_request_many(ARRAY(SELECT 'k' || g FROM generate_series(1, 20) g), 'saved')" >/dev/null
other_layout() { printf '\x01' | dd of="$save_file" bs=1 seek=5 conv=notrunc status=none; }
restart fast other_layout
check "a save file of another entry size: nothing loaded" "0" "$(loaded)"
p -c "SELECT count(*) FROM rate_limit_request_many(ARRAY(SELECT 'k' || g FROM generate_series(1, 20) g), 'saved')" >/dev/null
garbage() { truncate -s 8 "$save_file" && head -c 100000 /dev/urandom >>"$save_file"; }
restart fast garbage
check "random bytes after the header: nothing loaded, the server up" "0|1" "$(loaded)|$(p -c "SELECT 1")"
check "... each damaged file logged" "3" "$(($(grep -c 'is incomplete or of another version' "$SERVER_LOG") - logged_before))"

# 10. A memory limit dropped while the server ran without the preload (a restart with
#     shared_preload_libraries = '' to work around something), then defined again with it: the saved
#     entries are of the old epoch and count as absent, so the key starts full (nothing lost either way).
p -c "SELECT count(*) FROM rate_limit_request_many(ARRAY['e', 'e', 'e'], 'ro_memory')" >/dev/null
drop_without_preload() {
    "${OWN_AS_SERVER[@]}" pg_ctl -D "$OWN_DIR/data" -l "$SERVER_LOG" -w -t 60 \
        -o "-c listen_addresses='' -c unix_socket_directories='$OWN_DIR' -p 5432 -c shared_preload_libraries=''" start >/dev/null &&
        p -c "SELECT rate_limit_drop('ro_memory')" >/dev/null &&
        "${OWN_AS_SERVER[@]}" pg_ctl -D "$OWN_DIR/data" -m fast -w stop >/dev/null
}
restart fast drop_without_preload
p -c "SELECT rate_limit_define('ro_memory', 10, '1 day', storage => 'memory')" >/dev/null
check "a memory limit dropped without the preload and defined again: its key starts full" "10" "$(left e ro_memory)"

# 11. (twentieth review, f76's refund) A memory batch cancelled (statement_timeout) after keys with an
#     override, costs, a key given several times, a key denied before and after, and a shadow limit's keys
#     over their limit (allowed, nothing taken): every key is as before, none above its capacity (a shadow
#     key's remaining: 0 over its limit, 9 full); the same inside a PL/pgSQL block that catches the cancel
#     (a subtransaction), whose transaction goes on.
p -c "SELECT rate_limit_define('rf', 10, '1 day', storage => 'memory')" -c "SELECT rate_limit_override('o', 'rf', 3)" \
  -c "SELECT rate_limit_define('rfs', 10, '1 day', storage => 'memory', shadow => true)" \
  -c "SELECT count(*) FROM rate_limit_request_many(ARRAY['d','d','d','d','d','d','d','d','d','d','o'], 'rf')" \
  -c "SELECT count(*) FROM rate_limit_request_many(array_fill('s'::text, ARRAY[12]), 'rfs')" >/dev/null
rf_left() { p -c "SELECT string_agg(k || '=' || (SELECT CASE WHEN allowed THEN remaining + 1 ELSE 0 END FROM rate_limit_check(k, '$1')), ' ') FROM unnest(ARRAY[$2]) k"; }
got=$(PGOPTIONS="$PGOPTIONS -c statement_timeout=300ms" p \
    -c "SELECT count(*) FROM rate_limit_request_many(ARRAY['o','x','o','d','x','o','o'] || array_fill('z'::text, ARRAY[999000]), 'rf', ARRAY[1,2,1,1,3,1,1] || array_fill(0.000001::float8, ARRAY[999000]))" \
    -c "SELECT count(*) FROM rate_limit_request_many(ARRAY['s'] || array_fill('t'::text, ARRAY[999000]), 'rfs')" | tr '\n' ' ')
check "cancelled memory batches: 57014 each, every key as before (override, costs, duplicates, denied, shadow)" \
    "ERROR:  57014 ERROR:  57014 |o=2 d=0 x=10 z=10|0|9" \
    "$got|$(rf_left rf "'o','d','x','z'")|$(p -c "SELECT (rate_limit_check('s', 'rfs')).remaining || '|' || (rate_limit_check('t', 'rfs')).remaining")"
got=$(PGOPTIONS="$PGOPTIONS -c statement_timeout=300ms" p -c "BEGIN" \
    -c "DO \$\$ BEGIN PERFORM count(*) FROM rate_limit_request_many(ARRAY['x','x'] || array_fill('y'::text, ARRAY[999000]), 'rf');
        EXCEPTION WHEN query_canceled THEN RAISE NOTICE 'caught'; END \$\$" -c "SELECT 'then', allowed FROM rate_limit_request('x', 'rf')" -c "COMMIT" | tr '\n' ' ')
check "a memory batch cancelled inside a subtransaction: refunded, the transaction goes on" "then|t |x=9 y=10" "$got|$(rf_left rf "'x','y'")"

check "no crash but the SIGKILL of check 8" "1" "$(grep -c 'terminated by signal' "$SERVER_LOG")"
echo "failures: $failures"
[ "$failures" -eq 0 ] || { echo "REPRODUCED: $failures storage attacks no longer hold"; exit 1; }
holds "every storage attack held"
