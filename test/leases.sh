#!/usr/bin/env bash
# Concurrency limits (leases) against a real server, on a cluster of its own (scripts/common.sh): what
# pg_regress and the isolation tester cannot show from their sessions.
#
# 1. Session end: a session lease goes when its session disconnects.
# 2. pg_terminate_backend of a holder with a session lease and a transaction lease in an open transaction.
# 3. kill -9 of a holder (the postmaster's crash restart empties the lock table): nothing stays held.
# 4. Two-phase commit: PREPARE TRANSACTION hands the transaction leases to the prepared transaction, which
#    holds them after its session is gone, until COMMIT PREPARED / ROLLBACK PREPARED; a session lease it
#    took stays with the session.
# 5. pgbench, 8 clients on one key of 3 slots, half taking transaction leases and half session leases: a
#    sampler reading pg_locks throughout never sees more than 3 leases held, and both kinds were admitted
#    and denied.
# 6. A full lock table (max_locks_per_transaction = 10): acquire fails with 53200 and takes nothing; the
#    slots come back when the session that filled it ends.
#
# Every check prints "ok: ..." or "FAILED: ..."; ends with "cases: N"; exits 1 if any check failed.
set -euo pipefail
# shellcheck source-path=SCRIPTDIR source=../scripts/common.sh
source "$(dirname "$0")/../scripts/common.sh"

ensure_packages "${PACKAGES[@]}"
# shellcheck disable=SC2119  # no extra make arguments
build_and_install_extension
COMMON=(-c pg_ratelimit.access_path="${ACCESS_PATH:-direct}" -c max_prepared_transactions=4)

CASES=0
FAILURES=0
pass() { CASES=$((CASES + 1)); echo "ok: $*"; }
fail() { CASES=$((CASES + 1)); FAILURES=$((FAILURES + 1)); echo "FAILED: $*"; }
check() {
    if [ "$2" = "$3" ]; then pass "$1 ($2)"; else fail "$1: expected '$3', got '$2'"; fi
}

q() { psql -X -At -q -v ON_ERROR_STOP=1 "$@"; }
# The leases held in this database: "transaction,session".
leases() {
    q -c "SELECT count(*) FILTER (WHERE objsubid = 21069) || ',' || count(*) FILTER (WHERE objsubid = 21070)
            FROM pg_locks WHERE locktype = 'advisory' AND granted
             AND database = (SELECT oid FROM pg_database WHERE datname = current_database())"
}
acquire() { q -c "SELECT CASE WHEN allowed THEN 't' ELSE 'f' END || ',' || remaining FROM rate_limit_acquire('$1', '$2')"; }
# wait_for SQL EXPECTED: polls (up to 30 s) until SQL returns EXPECTED; returns 1 if it never does.
wait_for() {
    local i
    for i in $(seq 300); do
        [ "$(q -c "$1" 2>/dev/null || true)" = "$2" ] && return 0
        sleep 0.1
    done
    return 1
}
# A holder in the background: a session lease, then an open transaction with a transaction lease, then
# sleeps. Sets HOLDER_PID (psql's) and waits until both leases show.
start_holder() {
    local key=$1
    q -c "SELECT rate_limit_acquire('$key', 'exports', 'session')" \
      -c "BEGIN" -c "SELECT rate_limit_acquire('$key', 'exports')" -c "SELECT pg_sleep(600)" >/dev/null 2>&1 &
    HOLDER_PID=$!
    wait_for "SELECT count(*) FROM pg_locks WHERE objsubid IN (21069, 21070) AND granted AND pid <> pg_backend_pid()" 2 ||
        fail "the holder's leases never showed"
}
backend_of_holder() {
    q -c "SELECT pid FROM pg_stat_activity WHERE query LIKE '%pg_sleep(600)%' AND pid <> pg_backend_pid()"
}

cluster_init leases
cluster_start leases "${COMMON[@]}"
use_cluster leases
q -c "CREATE EXTENSION pg_ratelimit" -c "SELECT rate_limit_define('exports', 2, '1 hour', 'concurrency')" >/dev/null

# 1. Session end.
check "a session lease while its session lives" \
    "$(q -c "SELECT (rate_limit_acquire('s', 'exports', 'session')).allowed" -c "SELECT count(*) FROM pg_locks WHERE objsubid = 21070")" \
    "$(printf 't\n1')"
check "no lease after the session ended" "$(leases)" "0,0"

# 2. pg_terminate_backend.
start_holder t
check "the holder's two leases fill the key" "$(acquire t exports)" "f,0"
check "terminated" "$(q -c "SELECT pg_terminate_backend($(backend_of_holder), 30000)")" "t"
wait "$HOLDER_PID" 2>/dev/null || true
check "a terminated backend holds nothing" "$(leases)" "0,0"
check "its slots are free again" "$(acquire t exports)" "t,1"

# 3. kill -9 of a holder: the postmaster restarts every backend and the lock table starts empty.
start_holder k
victim=$(backend_of_holder)
as_root kill -9 "$victim" 2>/dev/null || kill -9 "$victim"
wait "$HOLDER_PID" 2>/dev/null || true
if wait_for "SELECT 1" 1; then pass "the server accepts connections after the crash restart"; else fail "no restart"; fi
check "nothing held after the crash restart" "$(leases)" "0,0"
check "the killed backend's slots are free" "$(acquire k exports)" "t,1"
check "the crash restart was a real one" \
    "$(grep -c 'terminated by signal 9' "$(cluster_dir leases)/server.log")" "1"

# 4. Two-phase commit.
q -c "BEGIN" -c "SELECT rate_limit_acquire('p', 'exports'), rate_limit_acquire('p', 'exports')" \
  -c "PREPARE TRANSACTION 'lease_commit'" >/dev/null
check "a prepared transaction holds its leases after its session ended" "$(leases)" "2,0"
check "they count" "$(acquire p exports)" "f,0"
q -c "COMMIT PREPARED 'lease_commit'"
check "released by COMMIT PREPARED" "$(acquire p exports)" "t,1"
q -c "BEGIN" -c "SELECT rate_limit_acquire('p', 'exports')" -c "PREPARE TRANSACTION 'lease_rollback'" >/dev/null
check "one held by a prepared transaction" "$(acquire p exports)" "t,0"
q -c "ROLLBACK PREPARED 'lease_rollback'"
check "released by ROLLBACK PREPARED" "$(acquire p exports)" "t,1"
# A session lease and a transaction lease of the same key in the transaction prepared: both kinds coexist.
check "PREPARE with a session lease held too" \
    "$(q -c "SELECT (rate_limit_acquire('p', 'exports', 'session')).allowed" -c "BEGIN" \
         -c "SELECT (rate_limit_acquire('p', 'exports')).allowed" -c "PREPARE TRANSACTION 'mixed'" \
         -c "SELECT count(*) FROM pg_locks WHERE objsubid IN (21069, 21070) AND granted")" "$(printf 't\nt\n2')"
check "the session lease went with its session, the prepared one stays" "$(leases)" "1,0"
q -c "COMMIT PREPARED 'mixed'"
# A session lease taken by the transaction prepared stays with the session: PREPARE is that transaction's
# last act in it, and a later ROLLBACK PREPARED (a transaction of its own) does not take it back.
check "a session lease taken by a prepared transaction stays with its session" \
    "$(q -c "BEGIN" -c "SELECT (rate_limit_acquire('s2', 'exports', 'session')).allowed" \
         -c "PREPARE TRANSACTION 'with_session'" -c "ROLLBACK PREPARED 'with_session'" \
         -c "SELECT count(*) FROM pg_locks WHERE objsubid = 21070 AND pid = pg_backend_pid()")" "$(printf 't\n1')"

# 5. pgbench: mixed scopes on one key of 3 slots; a sampler reads pg_locks throughout (pg_locks takes every
#    partition lock of the lock table: each sample is one consistent picture).
q -c "SELECT rate_limit_define('stress', 3, '1 hour', 'concurrency')" \
  -c "CREATE TABLE outcomes (scope text, allowed boolean)" >/dev/null
dir=$(cluster_dir leases)
cat >"$dir/transaction.sql" <<'SQL'
BEGIN;
INSERT INTO outcomes SELECT 'transaction', allowed FROM rate_limit_acquire('hot', 'stress');
SELECT pg_sleep(0.002);
COMMIT;
SQL
cat >"$dir/session.sql" <<'SQL'
INSERT INTO outcomes SELECT 'session', allowed FROM rate_limit_acquire('hot', 'stress', 'session');
SELECT pg_sleep(0.002);
SELECT rate_limit_release('hot', 'stress');
SQL
q -c "CREATE FUNCTION most_held(samples int) RETURNS int LANGUAGE plpgsql AS \$\$
DECLARE most int := 0; n int;
BEGIN
    FOR i IN 1..samples LOOP
        -- Backends holding a lease, except the one searching (holding the key's mutex, objsubid 21071):
        -- its probes take each free tag for a moment. Each client holds at most one lease at a time. One
        -- read of pg_locks (MATERIALIZED): a second read could miss the mutex of a search that a first
        -- read caught probing.
        WITH l AS MATERIALIZED (SELECT pid, objsubid FROM pg_locks WHERE locktype = 'advisory' AND granted)
        SELECT count(DISTINCT pid) INTO n FROM l
         WHERE objsubid IN (21069, 21070) AND pid NOT IN (SELECT pid FROM l WHERE objsubid = 21071);
        most := greatest(most, n);
        PERFORM pg_sleep(0.0005);
    END LOOP;
    RETURN most;
END \$\$" >/dev/null
q -c "SELECT most_held(4000)" >"$dir/most_held" &
sampler=$!
pgbench -n -c 8 -j 2 -T 8 -f "$dir/transaction.sql" -f "$dir/session.sql" >"$dir/pgbench.log" 2>&1 ||
    { cat "$dir/pgbench.log"; fail "pgbench"; }
wait "$sampler"
most=$(cat "$dir/most_held")
if [ "$most" -ge 1 ] && [ "$most" -le 3 ]; then pass "at most 3 leases ever held at once (sampled: $most)"; else
    fail "leases held at once: $most (limit 3)"; fi
counts=$(q -c "SELECT string_agg(scope || ':' || allowed || '=' || n, ' ' ORDER BY scope, allowed)
                 FROM (SELECT scope, allowed, count(*) AS n FROM outcomes GROUP BY 1, 2) c")
echo "   pgbench outcomes: $counts"
check "both scopes admitted and denied" \
    "$(q -c "SELECT count(*) FROM (SELECT DISTINCT scope, allowed FROM outcomes) d")" "4"
check "nothing held after the run" "$(leases)" "0,0"

# 6. A full lock table.
cluster_stop leases
cluster_start leases "${COMMON[@]}" -c max_locks_per_transaction=10 -c max_connections=10
q -c "SELECT rate_limit_define('wide', 10000, '1 hour', 'concurrency')" >/dev/null
out=$(q -c "DO \$\$ BEGIN FOR i IN 1..10000 LOOP PERFORM rate_limit_acquire('w', 'wide', 'session'); END LOOP; END \$\$" \
    -v VERBOSITY=verbose 2>&1 || true)
check "acquire on a full lock table" "$(echo "$out" | sed -n 's/^ERROR:  \([0-9A-Z]*\):.*/\1/p' | head -1)" "53200"
check "the slots are free again once that session ended" "$(acquire w wide)" "t,9999"
check "nothing held" "$(leases)" "0,0"

cluster_stop leases
echo "cases: $CASES"
[ "$FAILURES" -eq 0 ]
