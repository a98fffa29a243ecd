#!/usr/bin/env bash
# Attacks on review 21's fixes (the commit check of table limits' writers, changes that lock their keys
# first, memory entries' numbers and change markers) that held in the twenty-second review, kept as checks
# (exit 1 if any stops holding). Each prints "ok: ..." or "FAILED: ...". On a cluster of its own
# (own_cluster.sh: it sets synchronous_standby_names).
here=$(dirname "$0")
REVIEW_DB=postgres
source "$here/lib.sh"
source "$here/own_cluster.sh"
own_cluster_start -c pg_ratelimit.memory_keys=5000 -c max_prepared_transactions=2 -c max_connections=120
export PGDATABASE=postgres PGOPTIONS="-c client_min_messages=error"
failures=0
check() {  # check NAME EXPECTED ACTUAL
    if [ "$2" = "$3" ]; then echo "ok: $1"; else echo "FAILED: $1: expected [$2], got [$3]"; failures=$((failures + 1)); fi
}
p() { psql -X -q -At -v VERBOSITY=sqlstate "$@" 2>&1; }
U() { p -U review_trust4_tenant "$@"; }
sqlstate() { grep -o 'ERROR: *[0-9A-Z]*' | tr -s ' ' | tail -n 1; }
ms_since() { echo $(( ($(date +%s%N) - $1) / 1000000 )); }
until_true() {  # until_true QUERY: polls (up to 10 s) until QUERY returns t
    local _
    for _ in $(seq 1 200); do [ "$(p -c "$1")" = t ] && return 0; sleep 0.05; done
    echo "(waited 10 s in vain for: $1)"
}
sleeping() { echo "SELECT count(*) > 0 FROM pg_stat_activity WHERE wait_event = 'PgSleep' AND usename = '$1'"; }
p -c "CREATE ROLE review_trust4_tenant LOGIN" -c "CREATE EXTENSION pg_ratelimit" >/dev/null

# 1. Redefinitions under load, every storage: 8 pgbench clients (lock_wait 10 s, so that a change's own
#    bound settles any wait between them; 40001 retried) request 10 keys of a limit of 40 per day (k1
#    overridden to 20) for 3 s while the DBA switches its period between 1 and 2 days every 200 ms
#    (as_is: balances kept). Admissions are counted in the clients' transactions. Expected: no key
#    admitted more than its capacity (refill over 3 s: 0.003 of a unit), no client transaction failed
#    after its retries, every change succeeded or failed with 55P03/40P01/40001.
p -c "CREATE TABLE adm (k text)" -c "GRANT INSERT ON adm TO review_trust4_tenant" -c "CREATE FUNCTION try(k text) RETURNS void LANGUAGE plpgsql AS \$\$
      BEGIN IF (rate_limit_request(k, 'storm')).allowed THEN INSERT INTO adm VALUES (k); END IF; END \$\$" >/dev/null
bench=$OWN_DIR/storm.sql
printf '%s\n' '\set n random(0, 9)' "SELECT try('k' || :n);" >"$bench"
storm() {  # storm STORAGE ALGORITHM SHARDS ISOLATION
    local win="CASE WHEN '$2' LIKE '%window' THEN '2000-01-01'::timestamptz END" i=0 bad=0 out
    p -c "TRUNCATE adm" -c "SELECT rate_limit_define('storm', 40, '1 day', algorithm => '$2', shards => $3, storage => '$1', start => $win)" \
      -c "SELECT rate_limit_override('k1', 'storm', 20, 20)" >/dev/null
    local end=$(( $(date +%s) + 3 ))
    ( while [ "$(date +%s)" -lt "$end" ]; do
          i=$((i + 1))
          out=$(p -c "SELECT rate_limit_define('storm', 40, '$((i % 2 + 1)) days', algorithm => '$2', shards => $3, storage => '$1', rescale => 'as_is', start => $win)" | sqlstate)
          case "$out" in ''|'ERROR: 55P03'|'ERROR: 40P01'|'ERROR: 40001') ;; *) echo "change: $out";; esac
          sleep 0.2
      done ) >"$OWN_DIR/storm_changes" &
    out=$(PGOPTIONS="$PGOPTIONS -c pg_ratelimit.lock_wait=10s -c default_transaction_isolation=$4" \
          pgbench -n -c 8 -j 2 -T 3 --max-tries=50 -f "$bench" -U review_trust4_tenant postgres 2>&1)
    wait
    local failed retried over
    failed=$(grep -o 'number of failed transactions: [0-9]*' <<<"$out" | grep -o '[0-9]*$')
    retried=$(grep -o 'number of transactions retried: [0-9]*' <<<"$out" | grep -o '[0-9]*$')
    over=$(p -c "SELECT count(*) FROM (SELECT k, count(*) n FROM adm GROUP BY k) s WHERE n > CASE k WHEN 'k1' THEN 20 ELSE 40 END")
    echo "  ($1 $2, $3 shard(s), clients at $4: ${retried:-?} transactions retried after 40001, $(p -c "SELECT count(*) FROM adm") admitted)"
    check "redefinitions under load, $1 $2 ($3 shard(s), clients at $4): no key over its capacity, no transaction failed after retries, no unexpected error" \
          "0|0|" "$over|${failed:-aborted}|$(cat "$OWN_DIR/storm_changes")"
    p -c "SELECT rate_limit_drop('storm')" >/dev/null
}
p -c "GRANT EXECUTE ON FUNCTION try TO review_trust4_tenant" >/dev/null
storm durable token_bucket 2 'read\ committed'
storm unlogged gcra 1 'repeatable\ read'
storm memory sliding_window 1 'read\ committed'
storm durable fixed_window 1 serializable

# 2. Prepared transactions. a: a tenant's transaction takes 990 of a new key (1000 per hour) and is prepared;
#    a redefinition to 10 per hour fails with 55P03 at lock_wait 200 ms, and one with lock_wait 0 waits
#    until COMMIT PREPARED, then rewrites the key (0.1 of 10 left: nothing admitted). b: a redefinition
#    that commits between a tenant's request and its PREPARE TRANSACTION fails the PREPARE (40001).
p -c "SELECT rate_limit_define('prep', 1000, '1 hour')" >/dev/null
U -c "BEGIN" -c "SELECT (rate_limit_request('k', 'prep', 990)).allowed" -c "PREPARE TRANSACTION 'trust4_a'" >/dev/null
bounded=$(p -c "SET pg_ratelimit.lock_wait = '200ms'" -c "SELECT rate_limit_define('prep', 10, '1 hour')" | sqlstate)
p -c "SET pg_ratelimit.lock_wait = 0" -c "SELECT rate_limit_define('prep', 10, '1 hour')" >"$OWN_DIR/c2" &
sleep 0.5
p -c "COMMIT PREPARED 'trust4_a'" >/dev/null
wait
check "a prepared transaction holds a redefinition off (55P03 at lock_wait), and one that waits rewrites its key once it commits" \
      "ERROR: 55P03||0" "$bounded|$(sqlstate <"$OWN_DIR/c2")|$(p -c "SELECT count(*) FILTER (WHERE (rate_limit_request('k', 'prep')).allowed) FROM generate_series(1, 20)")"
p -c "SELECT rate_limit_define('prep', 1000, '1 hour', rescale => 'reset')" >/dev/null
U -c "BEGIN" -c "SELECT (rate_limit_request('k2', 'prep', 990)).allowed" -c "SELECT pg_sleep(1)" -c "PREPARE TRANSACTION 'trust4_b'" >"$OWN_DIR/c2" &
until_true "$(sleeping review_trust4_tenant)"
p -c "SELECT rate_limit_define('prep', 10, '1 hour')" >/dev/null
wait
check "a redefinition committed before PREPARE TRANSACTION fails the PREPARE (40001), nothing prepared" \
      "ERROR: 40001|0" "$(sqlstate <"$OWN_DIR/c2")|$(p -c "SELECT count(*) FROM pg_prepared_xacts")"

# 3. Savepoints and PL/pgSQL blocks (a transaction of the superuser, so that f91's 42501 does not hide the
#    outcome; a redefinition of 'sp' commits while it sleeps). a: the only request, in a block that then
#    fails: COMMIT succeeds (nothing of the limit written). b: a request, then one in a block that fails:
#    40001. c: a request in a released savepoint: 40001. d: a request, then rate_limit_define in a block
#    that then fails (its forget of the notes undone): 40001.
savepoint_case() {  # savepoint_case SQL...: the COMMIT's outcome, 'sp' redefined while the transaction sleeps
    p -c "SELECT rate_limit_define('sp', 1000, '1 hour', rescale => 'reset')" >/dev/null
    local args=() s
    for s in "$@"; do args+=(-c "$s"); done
    p -c "BEGIN" "${args[@]}" -c "SELECT pg_sleep(0.8)" -c "COMMIT" -c "SELECT 'done'" >"$OWN_DIR/c3" &
    until_true "$(sleeping postgres)"
    p -c "SELECT rate_limit_define('sp', 10, '1 hour')" >/dev/null
    wait
    local out
    out=$(sqlstate <"$OWN_DIR/c3")
    echo "${out:-committed}"
}
fail_after_request="DO \$\$ BEGIN BEGIN PERFORM rate_limit_request('k', 'sp', 5); RAISE EXCEPTION 'no'; EXCEPTION WHEN raise_exception THEN NULL; END; END \$\$"
a=$(savepoint_case "$fail_after_request")
b=$(savepoint_case "SELECT (rate_limit_request('j', 'sp')).allowed" "$fail_after_request")
c=$(savepoint_case "SAVEPOINT s" "SELECT (rate_limit_request('k', 'sp')).allowed" "RELEASE s")
d=$(savepoint_case "SELECT (rate_limit_request('k', 'sp')).allowed" \
      "DO \$\$ BEGIN BEGIN PERFORM rate_limit_define('sp', 1000, '1 hour'); RAISE EXCEPTION 'no'; EXCEPTION WHEN raise_exception THEN NULL; END; END \$\$")
check "savepoints and PL/pgSQL blocks: a request undone by its block commits; requests kept, or a define undone, fail (40001)" \
      "committed|ERROR: 40001|ERROR: 40001|ERROR: 40001" "$a|$b|$c|$d"

# 4. Many keys. A request_many of 20,000 keys on a limit with 10,050 overrides (more than are read whole: the
#    check looks each key up) commits within 2 s (the superuser's: a tenant's fails with 42501, f91); a
#    tenant's of 20,000 keys fails with 40001 (no read: more than 10,000 keys noted) when an override of the
#    limit changed meanwhile.
p -c "SELECT rate_limit_define('many', 1000000, '1 hour')" \
  -c "INSERT INTO rate_limit_override (limit_name, key, rate) SELECT 'many', 'o' || g, 5 FROM generate_series(1, 10050) g" >/dev/null
t0=$(date +%s%N)
out=$(p -c "BEGIN" -c "SELECT count(*) FROM rate_limit_request_many(array(SELECT 'u' || g FROM generate_series(1, 20000) g), 'many')" -c "COMMIT" | tr '\n' ' ')
took=$(ms_since "$t0")
U -c "BEGIN" -c "SELECT count(*) FROM rate_limit_request_many(array(SELECT 'v' || g FROM generate_series(1, 20000) g), 'many')" \
  -c "SELECT pg_sleep(1)" -c "COMMIT" >"$OWN_DIR/c4" &
until_true "$(sleeping review_trust4_tenant)"
p -c "SELECT rate_limit_override('o1', 'many', 6)" >/dev/null
wait
check "20,000 keys of a limit with 10,050 overrides commit in under 2 s, and fail with 40001 after an override change" \
      "20000 |true|ERROR: 40001" "$out|$([ "$took" -lt 2000 ] && echo true || echo "$took ms")|$(sqlstate <"$OWN_DIR/c4")"

# 5. Two transactions that each requested an existing key of 'pair' and then redefine it: at least one
#    fails (55P03 or 40P01; both may, as lock_wait and deadlock_timeout are both 1 s), within 3 s; none hangs.
p -c "SELECT rate_limit_define('pair', 1000, '1 hour')" -c "SELECT (rate_limit_request('A', 'pair')).allowed, (rate_limit_request('B', 'pair')).allowed" >/dev/null
t0=$(date +%s%N)
for k in A B; do
    p -c "BEGIN" -c "SELECT (rate_limit_request('$k', 'pair')).allowed" -c "SELECT pg_sleep(0.3)" \
      -c "SELECT rate_limit_define('pair', 1000, '$([ $k = A ] && echo 2 || echo 3) hours')" -c "COMMIT" >"$OWN_DIR/c5$k" &
done
wait
took=$(ms_since "$t0")
outcomes=$(for k in A B; do out=$(sqlstate <"$OWN_DIR/c5$k"); echo "${out:-ok}"; done | sort | tr '\n' ' ')
case "$outcomes" in "ERROR: 55P03 ok "|"ERROR: 40P01 ok "|"ERROR: 40P01 ERROR: 55P03 "|"ERROR: 55P03 ERROR: 55P03 ") outcomes=expected;; esac
check "two transactions each requesting a key then redefining the limit: at least one fails (55P03/40P01), within 3 s" \
      "expected|true" "$outcomes|$([ "$took" -lt 3000 ] && echo true || echo "$took ms")"

# 6. Memory change markers. a: 70 transactions redefine 70 memory limits at once (more than the 64
#    markers): all commit within 15 s, and each key is carried over (90 of 100 used: 1 of 10 left). b: one
#    transaction redefines 20 memory limits (a marker for every limit) while 3 tenant sessions call them:
#    every call returns, and each key is carried over.
p -c "SELECT count(rate_limit_define('mk' || g, 100, '1 hour', storage => 'memory')) FROM generate_series(1, 70) g" \
  -c "SELECT count(*) FROM generate_series(1, 70) g WHERE (rate_limit_request('k', 'mk' || g, 90)).allowed" >/dev/null
t0=$(date +%s%N)
for g in $(seq 1 70); do p -c "SELECT rate_limit_define('mk$g', 10, '1 hour', storage => 'memory')" >"$OWN_DIR/c6_$g" & done
wait
took=$(ms_since "$t0")
errors=$(cat "$OWN_DIR"/c6_* | grep -c ERROR)
left=$(p -c "SELECT count(*) FROM generate_series(1, 70) g WHERE (rate_limit_check('k', 'mk' || g)).remaining = 0 AND (rate_limit_request('k', 'mk' || g)).allowed AND NOT (rate_limit_request('k', 'mk' || g)).allowed")
check "70 memory redefinitions at once (64 markers): all commit, each key carried over (1 left of 10)" \
      "0|70|true" "$errors|$left|$([ "$took" -lt 15000 ] && echo true || echo "$took ms")"
p -c "SELECT count(rate_limit_define('mk' || g, 100, '1 hour', storage => 'memory', rescale => 'reset')) FROM generate_series(1, 20) g" \
  -c "SELECT count(*) FROM generate_series(1, 20) g WHERE (rate_limit_request('k', 'mk' || g, 90)).allowed" >/dev/null
for c in 1 2 3; do
    U -c "SET statement_timeout = '20s'" -c "SELECT count(*) FROM generate_series(1, 3000) i, LATERAL rate_limit_request('other$c', 'mk' || (i % 20 + 1), 1e-6) r" >"$OWN_DIR/c6b_$c" &
done
sleep 0.3
for round in 1 2 3; do
    p -c "BEGIN" -c "SELECT count(rate_limit_define('mk' || g, $([ $round = 2 ] && echo 100 || echo 10), '1 hour', storage => 'memory')) FROM generate_series(1, 20) g" -c "COMMIT" >/dev/null
done
wait
returned=$(cat "$OWN_DIR"/c6b_* | grep -c '^3000$')
left=$(p -c "SELECT count(*) FROM generate_series(1, 20) g WHERE (rate_limit_request('k', 'mk' || g)).allowed AND NOT (rate_limit_request('k', 'mk' || g)).allowed")
check "a transaction redefining 20 memory limits (a marker for every limit) three times under calls: every call returns, keys carried over" \
      "3|20" "$returned|$left"

# 7. A memory redefinition stuck in its commit (synchronous_standby_names names a standby that never
#    comes, after PRE_COMMIT set its marker): calls on the limit return at once; pg_terminate_backend of the
#    redefining session ends the wait, the commit completes (its entries carried over: 1 left of 10), and
#    later calls do not wait.
p -c "SELECT rate_limit_define('sync', 100, '1 hour', storage => 'memory')" -c "SELECT (rate_limit_request('k', 'sync', 90)).allowed" \
  -c "ALTER SYSTEM SET synchronous_standby_names = 'nobody'" -c "SELECT pg_reload_conf()" >/dev/null
sleep 0.5
p -c "SELECT rate_limit_define('sync', 10, '1 hour', storage => 'memory')" >/dev/null &
until_true "SELECT count(*) > 0 FROM pg_stat_activity WHERE wait_event = 'SyncRep'"
t0=$(date +%s%N)
during=$(U -c "SET statement_timeout = '5s'" -c "SELECT (rate_limit_check('k', 'sync')).remaining" -c "SELECT (rate_limit_request('n', 'sync')).allowed" | tr '\n' ' ')
during_ms=$(ms_since "$t0")
p -c "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE wait_event = 'SyncRep'" >/dev/null
wait
p -c "ALTER SYSTEM RESET synchronous_standby_names" -c "SELECT pg_reload_conf()" >/dev/null
sleep 0.5
after=$(U -c "SET statement_timeout = '5s'" -c "SELECT (rate_limit_request('k', 'sync')).allowed, (rate_limit_request('k', 'sync')).allowed" -c "SELECT rate FROM rate_limit_config WHERE name = 'sync'" | tr '\n' ' ')
check "a memory redefinition stuck in synchronous replication holds no call up; terminated, it commits and carries its keys over" \
      "9 t |true|t|f 10 " "$during|$([ "$during_ms" -lt 1000 ] && echo true || echo "$during_ms ms")|$after"

# 8. A memory key exhausted under 100 per minute, redefined to 10 per minute while 3 tenant sessions
#    (pgbench) hammer it: nothing admitted from 50 ms after the redefinition returned (its fraction of a unit,
#    0.1 of 10, refills in 6 s), in 3 runs (f89's window closed).
p -c "CREATE TABLE adm8 (t timestamptz)" -c "GRANT INSERT ON adm8 TO review_trust4_tenant" -c "CREATE TABLE switched (t timestamptz)" >/dev/null
echo "INSERT INTO adm8 SELECT clock_timestamp() FROM rate_limit_request('k', 'sw') WHERE allowed;" >"$OWN_DIR/sw.sql"
admitted=0
for run in 1 2 3; do
    p -c "SELECT rate_limit_define('sw', 100, '1 minute', storage => 'memory', rescale => 'reset')" \
      -c "SELECT count(*) FROM generate_series(1, 105) WHERE (rate_limit_request('k', 'sw')).allowed" -c "TRUNCATE adm8, switched" >/dev/null
    pgbench -n -c 3 -j 1 -T 2 -U review_trust4_tenant -f "$OWN_DIR/sw.sql" postgres >/dev/null 2>&1 &
    sleep 0.5
    p -c "SELECT rate_limit_define('sw', 10, '1 minute', storage => 'memory')" -c "INSERT INTO switched VALUES (clock_timestamp())" >/dev/null
    wait
    admitted=$((admitted + $(p -c "SELECT count(*) FROM adm8 WHERE t > (SELECT t FROM switched) + interval '50 ms'")))
done
check "a memory key exhausted under 100 per minute and switched to 10 under load admits nothing more (3 runs)" "0" "$admitted"

check "no backend crashed" "0" "$(grep -c 'terminated by signal' "$SERVER_LOG")"
[ "$failures" -eq 0 ] || { echo "$failures attack(s) no longer held"; exit 1; }
echo "holds: every attack of the twenty-second review that held still holds"
