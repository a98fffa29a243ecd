#!/usr/bin/env bash
# Bounded cleanup under churn, on a cluster of its own (scripts/common.sh): 1,000,000 distinct keys go
# through one limit while cleanup runs on a schedule, and the state table and its indexes stay bounded.
#
# The load: ROUNDS rounds; each is one simulated minute later (pg_ratelimit.fake_now, read by every session
# from the table test_clock) and requests KEYS / ROUNDS new random keys (md5 of a counter, so they spread
# over both indexes as real keys would) plus HOT keys asked every round, through rate_limit_request_many
# in batches, two clients at a time. The limit refills a key in a second, so a new key is idle as soon as
# its round is over, and deletable CLEANUP_MARGIN (five simulated minutes) later: about six rounds of keys
# are live at any time. The hot keys are never idle: cleanup reads them on every pass and keeps them.
#
# The schedule: a loop that calls CALL rate_limit_cleanup_batches() (through cleanup_now(), which sets the
# simulated clock first) back to back while the load runs, and pg_cron (Debian's postgresql-15-cron,
# installed if missing; shared_preload_libraries = 'pg_cron,pg_ratelimit', cron.database_name, and
# cron.host set to the cluster's socket directory since the cluster has no TCP listener) with two jobs
# every minute: the README's recipe as it stands ('CALL rate_limit_cleanup_batches()', real clock, under
# which the simulated rows are ahead and stay), and cleanup_now() on the simulated clock. The script waits
# until both have run and checks cron.job_run_details says they succeeded.
#
# Vacuum: autovacuum, on, with settings for a table that churns (naptime 1 s, no cost delay, vacuum after
# 2% + 1,000 dead rows), as a production server running this load would need; no explicit VACUUM. So the
# sizes below are what a real server reaches, not what a VACUUM after each round would make them.
#
# Asserts, and prints the sizes (heap, primary key, hash index) after every tenth round:
# - the rows never exceed the keys cleanup may not delete yet (the last six rounds' and the hot ones)
#   plus the rounds that began within two of the longest cleanup passes (the schedule's lag); the table
#   and its indexes stay below BYTES_PER_LIVE_ROW bytes per row of that bound, and per row present at
#   the busiest round;
#   and the largest total of the last quarter of the run is no bigger than 1.3 times the largest of
#   the second quarter (no growth once the churn is steady);
# - cleanup deleted every key that went idle: after the load, one more pass an hour later deletes the
#   rest, and the table holds nothing;
# - every request was admitted (each key is new or refilled), and nothing waited on a lock for as long
#   as deadlock_timeout (100 ms; log_lock_waits is on, and the server log has no "still waiting").
#
# Ends with "cases: N"; exits 1 if any check failed. ACCESS_PATH (direct or sql, default direct) sets
# pg_ratelimit.access_path. KEYS, ROUNDS and HOT may be set smaller for a quick run.
set -euo pipefail
# shellcheck source-path=SCRIPTDIR source=../scripts/common.sh
source "$(dirname "$0")/../scripts/common.sh"

KEYS=${KEYS:-1000000}
ROUNDS=${ROUNDS:-100}
HOT=${HOT:-5000}
ROUND_SECONDS=${ROUND_SECONDS:-1}   # real time a round takes at least (a simulated minute)
BATCH=5000                 # keys per rate_limit_request_many call
BYTES_PER_LIVE_ROW=1000    # the bound on heap + indexes per live row (measured: about 300 to 400)
PER_ROUND=$((KEYS / ROUNDS))
# Keys cleanup may not delete yet at the end of a round: those of the last six rounds (a key used at T is
# full at T + 1 s, and deletable CLEANUP_MARGIN = 5 minutes later) and the hot ones.
NOT_DELETABLE=$((6 * PER_ROUND + HOT))

ensure_packages "${PACKAGES[@]}" postgresql-15-cron   # before the private copy of PostgreSQL is made
# shellcheck disable=SC2119  # no extra make arguments
build_and_install_extension

CASES=0
FAILURES=0
pass() { CASES=$((CASES + 1)); echo "ok: $*"; }
fail() { CASES=$((CASES + 1)); FAILURES=$((FAILURES + 1)); echo "FAILED: $*"; }
check() { if [ "$2" = "$3" ]; then pass "$1 ($2)"; else fail "$1: expected '$3', got '$2'"; fi; }
check_le() { if [ "$2" -le "$3" ]; then pass "$1 ($2 <= $3)"; else fail "$1: $2 > $3"; fi; }

cluster_init cleanup
DIR=$(cluster_dir cleanup)
cluster_start cleanup -c shared_preload_libraries=pg_cron,pg_ratelimit -c cron.database_name=postgres \
    -c cron.host="$DIR" -c pg_ratelimit.access_path="${ACCESS_PATH:-direct}" \
    -c autovacuum=on -c autovacuum_naptime=1s -c autovacuum_vacuum_cost_delay=0 \
    -c autovacuum_vacuum_scale_factor=0.02 -c autovacuum_vacuum_threshold=1000 \
    -c log_lock_waits=on -c deadlock_timeout=100ms -c max_connections=50
use_cluster cleanup
q() { psql -X -At -q -v ON_ERROR_STOP=1 "$@"; }

q <<'SQL'
CREATE EXTENSION pg_ratelimit;
CREATE EXTENSION pg_cron;
SELECT rate_limit_define('churn', rate => 1, period => '1 second');
-- The simulated clock every session of the test reads, and what each cleanup call did.
CREATE TABLE test_clock (now timestamptz NOT NULL);
INSERT INTO test_clock VALUES ('2030-01-01 00:00:00+00');
CREATE TABLE cleanup_log (who text, started timestamptz, finished timestamptz, deleted bigint);
CREATE PROCEDURE cleanup_now(who text) LANGUAGE plpgsql AS $$
DECLARE
    deleted bigint;
    started timestamptz := clock_timestamp();
BEGIN
    PERFORM set_config('pg_ratelimit.fake_now', (SELECT now::text FROM test_clock), false);
    CALL rate_limit_cleanup_batches(NULL, 2000, deleted);
    INSERT INTO cleanup_log VALUES (who, started, clock_timestamp(), deleted);
END
$$;
-- pg_cron: the README's recipe, and the same on the simulated clock.
SELECT cron.schedule('rate-limit-cleanup', '* * * * *', $$CALL rate_limit_cleanup_batches()$$) > 0 AS scheduled;
SELECT cron.schedule('rate-limit-cleanup-test-clock', '* * * * *', $$CALL cleanup_now('pg_cron')$$) > 0 AS scheduled;
SQL

# The cleanup loop, until the load is done.
STOP=$RUN_DIR/stop_cleanup
(
    while [ ! -e "$STOP" ]; do q -c "CALL cleanup_now('loop')" >/dev/null; sleep 0.2; done
) &
LOOP_PID=$!
on_exit "touch '$STOP'; kill $LOOP_PID 2>/dev/null || true"

# request CLIENT ROUND: this client's half of the round's new keys and of the hot keys, in batches;
# prints how many were denied and the slowest batch in milliseconds.
request() {
    local client=$1 round=$2 first last
    first=$((round * PER_ROUND + client * PER_ROUND / 2))
    last=$((round * PER_ROUND + (client + 1) * PER_ROUND / 2 - 1))
    q <<SQL
CREATE TEMP TABLE batches (denied bigint, ms float8);
DO \$\$
DECLARE
    started timestamptz;
    denied bigint;
    hot_first constant int := $client * $HOT / 2;
    hot_last constant int := ($client + 1) * $HOT / 2 - 1;
BEGIN
    PERFORM set_config('pg_ratelimit.fake_now', (SELECT now::text FROM test_clock), false);
    FOR batch_start IN $first..$last BY $BATCH LOOP
        started := clock_timestamp();
        SELECT count(*) FILTER (WHERE NOT allowed) INTO denied
          FROM rate_limit_request_many(ARRAY(SELECT md5('key ' || i)
                                               FROM generate_series(batch_start, least(batch_start + $BATCH - 1, $last)) AS i),
                                       'churn');
        INSERT INTO batches VALUES (denied, 1000 * extract(epoch FROM clock_timestamp() - started));
    END LOOP;
    started := clock_timestamp();
    SELECT count(*) FILTER (WHERE NOT allowed) INTO denied
      FROM rate_limit_request_many(ARRAY(SELECT 'hot ' || i FROM generate_series(hot_first, hot_last) AS i), 'churn');
    INSERT INTO batches VALUES (denied, 1000 * extract(epoch FROM clock_timestamp() - started));
END
\$\$;
SELECT sum(denied) || ' ' || round(max(ms)) FROM batches;
SQL
}

SIZES="SELECT (SELECT count(*) FROM rate_limit_state),
              coalesce((SELECT n_dead_tup FROM pg_stat_user_tables WHERE relname = 'rate_limit_state'), 0),
              pg_relation_size('rate_limit_state'), pg_relation_size('rate_limit_state_pkey'),
              pg_relation_size('rate_limit_state_lookup'), pg_total_relation_size('rate_limit_state'),
              (SELECT coalesce(sum(deleted), 0) FROM cleanup_log)"
mb() { awk -v b="$1" 'BEGIN { printf "%.1f", b / 1048576 }'; }

log "driving $KEYS keys through limit 'churn' in $ROUNDS rounds, cleanup running"
printf '%6s %9s %8s %7s %8s %8s %8s %8s %9s %6s\n' round keys rows dead heap_MB pkey_MB hash_MB total_MB deleted max_ms
DENIED=0
SLOWEST=0
MAX_LIVE=0
MAX_TOTAL=0
MAX_TOTAL_Q2=0
MAX_TOTAL_Q4=0
STARTED=$(date +%s)
for ((round = 0; round < ROUNDS; round++)); do
    round_started=$(date +%s%N)
    q -c "UPDATE test_clock SET now = '2030-01-01 00:00:00+00'::timestamptz + interval '1 minute' * $round"
    request 0 "$round" >"$RUN_DIR/client0" &
    pid0=$!
    request 1 "$round" >"$RUN_DIR/client1"
    wait "$pid0"
    for client in 0 1; do
        read -r denied ms <"$RUN_DIR/client$client"
        DENIED=$((DENIED + denied))
        [ "$ms" -gt "$SLOWEST" ] && SLOWEST=$ms
    done
    IFS='|' read -r rows dead heap pkey hash total deleted <<<"$(q -c "$SIZES")"
    [ "$rows" -gt "$MAX_LIVE" ] && MAX_LIVE=$rows
    [ "$total" -gt "$MAX_TOTAL" ] && MAX_TOTAL=$total
    [ "$round" -eq 0 ] && FIRST_ROUND_BYTES_PER_ROW=$((total / rows))
    # The second quarter (steady churn: the live keys are six to ten rounds' worth) against the last.
    if [ "$round" -ge $((ROUNDS / 4)) ] && [ "$round" -lt $((ROUNDS / 2)) ] && [ "$total" -gt "$MAX_TOTAL_Q2" ]; then
        MAX_TOTAL_Q2=$total
    fi
    if [ "$round" -ge $((ROUNDS * 3 / 4)) ] && [ "$total" -gt "$MAX_TOTAL_Q4" ]; then MAX_TOTAL_Q4=$total; fi
    if [ $((round % 10)) -eq 9 ] || [ "$round" -eq 0 ]; then
        printf '%6s %9s %8s %7s %8s %8s %8s %8s %9s %6s\n' $((round + 1)) $(((round + 1) * PER_ROUND)) "$rows" "$dead" \
            "$(mb "$heap")" "$(mb "$pkey")" "$(mb "$hash")" "$(mb "$total")" "$deleted" "$ms"
    fi
    # A round lasts at least ROUND_SECONDS: the load must not outrun what any cleanup could delete on
    # this 2-core machine (measured: about 90,000 rows a second with nothing else running).
    left_ms=$((ROUND_SECONDS * 1000 - ($(date +%s%N) - round_started) / 1000000))
    [ "$left_ms" -gt 0 ] && sleep "$(awk -v ms="$left_ms" 'BEGIN { printf "%.3f", ms / 1000 }')"
done
echo "load: $(($(date +%s) - STARTED)) s"

touch "$STOP"
wait "$LOOP_PID" || true

check "requests denied" "$DENIED" 0
# A key that became deletable is gone within two passes of the loop (the one running then may have
# passed it): the rows may exceed the keys not deletable yet by the rounds that began within two of the
# longest passes (measured: passes take 0.3 s to 5 s here, as the two load clients leave the cores free).
LONGEST_PASS_MS=$(q -c "SELECT round(1000 * extract(epoch FROM max(finished - started))) FROM cleanup_log WHERE who = 'loop'")
LAG_ROUNDS=$(((2 * (LONGEST_PASS_MS + 200) + ROUND_SECONDS * 1000 - 1) / (ROUND_SECONDS * 1000) + 1))
LIVE_KEYS=$((NOT_DELETABLE + LAG_ROUNDS * PER_ROUND))
check_le "most rows at the end of a round (not deletable yet: $NOT_DELETABLE; lag: $LAG_ROUNDS rounds, longest pass $LONGEST_PASS_MS ms)" \
    "$MAX_LIVE" "$LIVE_KEYS"
check_le "largest heap + indexes, bytes ($BYTES_PER_LIVE_ROW per row of that bound, $LIVE_KEYS)" \
    "$MAX_TOTAL" "$((BYTES_PER_LIVE_ROW * LIVE_KEYS))"
check_le "largest heap + indexes, bytes ($BYTES_PER_LIVE_ROW per row at the busiest round, $MAX_LIVE)" \
    "$MAX_TOTAL" "$((BYTES_PER_LIVE_ROW * MAX_LIVE))"
if [ "$ROUNDS" -ge 40 ]; then
    check_le "largest total bytes of the last quarter vs 1.3 x the largest of the second quarter ($MAX_TOTAL_Q2)" \
        "$MAX_TOTAL_Q4" "$((MAX_TOTAL_Q2 * 13 / 10))"
else
    echo "(no growth check: it needs ROUNDS >= 40, for a second quarter of steady churn)"
fi
echo "slowest request batch ($BATCH keys): $SLOWEST ms"
echo "without cleanup: $((ROUNDS * PER_ROUND + HOT)) rows, about $(mb $(((ROUNDS * PER_ROUND + HOT) * FIRST_ROUND_BYTES_PER_ROW))) MB" \
     "at the first round's $FIRST_ROUND_BYTES_PER_ROW bytes per row (an estimate, not measured);" \
     "with it, at most $MAX_LIVE rows and $(mb "$MAX_TOTAL") MB (measured)"

# pg_cron: wait (up to 75 s) until both jobs have run since the start, and check how they ended.
log "waiting for pg_cron's jobs"
for ((i = 0; i < 75; i++)); do
    runs=$(q -c "SELECT count(DISTINCT jobid) FROM cron.job_run_details WHERE status IN ('succeeded', 'failed')")
    [ "$runs" -ge 2 ] && break
    sleep 1
done
q -c "SELECT j.jobname || ': ' || d.status || ' (' || coalesce(d.return_message, '') || ')'
        FROM cron.job_run_details d JOIN cron.job j USING (jobid) ORDER BY d.start_time"
check "pg_cron jobs that ran and failed" \
    "$(q -c "SELECT count(*) FROM cron.job_run_details WHERE status <> 'succeeded' AND status <> 'running'")" 0
check "pg_cron jobs that succeeded (of 2)" \
    "$(q -c "SELECT count(DISTINCT jobid) FROM cron.job_run_details WHERE status = 'succeeded'")" 2
check "pg_cron's cleanup_now runs logged" \
    "$(q -c "SELECT count(*) > 0 FROM cleanup_log WHERE who = 'pg_cron'")" t
q -c "SELECT who || ': ' || count(*) || ' calls, ' || sum(deleted) || ' rows deleted, longest '
             || round(1000 * extract(epoch FROM max(finished - started))) || ' ms'
        FROM cleanup_log GROUP BY who ORDER BY who"

# An hour later every key is idle: one more pass leaves nothing.
q -c "UPDATE test_clock SET now = now + interval '1 hour'"
q -c "CALL cleanup_now('final')" >/dev/null
check "rows left after the final pass" "$(q -c "SELECT count(*) FROM rate_limit_state")" 0
check "rows deleted in all = keys driven + hot keys" \
    "$(q -c "SELECT sum(deleted) FROM cleanup_log")" "$((ROUNDS * PER_ROUND + HOT))"

waits=$(grep -c 'still waiting' "$DIR/server.log" || true)
check "lock waits of 100 ms or more (log_lock_waits)" "$waits" 0
[ "$waits" -eq 0 ] || grep 'still waiting' "$DIR/server.log" | head -n 5

echo "cases: $CASES"
[ "$FAILURES" -eq 0 ]
