#!/usr/bin/env bash
# Finding 94 (medium): f87's fix makes a change (rate_limit_define, _drop, _override) lock its keys' rows
# (lock_stored_keys) before it takes the limit's lock, so that its waits for the transactions holding
# them hold up no writer. But the rows it then rewrites or deletes under the limit's lock
# (rescale_stored_keys, delete_stored_keys, rescale_stored_key: each batch SELECT ... FOR NO KEY UPDATE
# with a new snapshot) include rows first committed after lock_stored_keys ran, which it never locked:
# it waits for their holders with the limit's ExclusiveLock held, and every writer of the limit, which
# takes that lock in RowShareLock to commit, waits behind it (pg_ratelimit.lock_wait, then 55P03), as
# before f87's fix. A tenant (any login role) places such a row at will: it holds one key of its own for
# less than lock_wait (so the change waits for it in lock_stored_keys), creates a new key meanwhile, and
# holds that one. The same happens without any malice: an autocommit writer whose UPDATE of such a row
# falls between the change's lock_stored_keys and its rewrite waits for the change at COMMIT while the
# change waits for its row (a deadlock that lock_wait resolves after a second; pgbench at 8 clients on
# 10 keys of a durable sliding window with overrides, redefined every 200 ms, saw every client fail with
# 55P03 within a second, the change too).
# Attack: 'api' is 1000000 per hour. The tenant holds its key 'slow' for 0.8 s; the DBA runs
# rate_limit_define('api', ...) with pg_ratelimit.lock_wait = 3s (the README's advice for a change that a
# transaction holds up); once the change waits for 'slow', the tenant creates key 'new' (autocommit) and
# holds it in a transaction of 4 s. An application makes a request on another key every 100 ms
# (autocommit). Then the same with the DBA at the default lock_wait (1 s).
# Expected (f87's): the other keys' requests are decided as usual: no 55P03, none stalled by the change.
# Found: with lock_wait = 3s, the application's requests fail with 55P03 ("rate limit "api" is held by
# another transaction") for as long; at the default, each stalls about 1 s; the change fails both times.
here=$(dirname "$0")
source "$here/lib.sh"
setup_review review_f94_tenant review_f94_app
export PGOPTIONS="-c client_min_messages=error"
q -c "SELECT rate_limit_define('api', 1000000, '1 hour')" >/dev/null || exit 2
T() { q_any -U review_f94_tenant -v VERBOSITY=sqlstate "$@"; }
T -c "SELECT (rate_limit_request('slow', 'api', 1e-9)).allowed" >/dev/null

until_waiting() {  # until a lock request is waiting (pg_locks is readable by any role), up to 10 s
    local _
    for _ in $(seq 1 200); do
        [ "$(T -c "SELECT count(*) > 0 FROM pg_locks WHERE NOT granted")" = t ] && return 0
        sleep 0.02
    done
    echo "(waited 10 s in vain for a lock wait)"
}
attempt() {  # attempt LOCK_WAIT RATE: the change's outcome, the application's failures, its slowest request (ms), its requests
    local app_log change_log
    app_log=$(mktemp)
    change_log=$(mktemp)
    q -c "DELETE FROM rate_limit_state WHERE key = 'new'" >/dev/null
    T -c "BEGIN" -c "SELECT (rate_limit_request('slow', 'api', 1e-9)).allowed" -c "SELECT pg_sleep(0.8)" -c "COMMIT" >/dev/null &
    sleep 0.2
    (   for i in $(seq 1 40); do
            t0=$(date +%s%N)
            out=$(q_any -U review_f94_app -v VERBOSITY=sqlstate -c "SELECT (rate_limit_request('user$((i % 5))', 'api')).allowed")
            echo "$(( ($(date +%s%N) - t0) / 1000000 )) $out"
            sleep 0.1
        done >"$app_log" ) &
    local app=$!
    q_any -v VERBOSITY=sqlstate -c "SET pg_ratelimit.lock_wait = '$1'" -c "SELECT rate_limit_define('api', $2, '1 hour')" >"$change_log" &
    local change=$!
    until_waiting
    T -c "SELECT (rate_limit_request('new', 'api', 1e-9)).allowed" >/dev/null
    T -c "BEGIN" -c "SELECT (rate_limit_request('new', 'api', 1e-9)).allowed" -c "SELECT pg_sleep(4)" -c "ROLLBACK" >/dev/null &
    local holder=$!
    wait $change $app $holder
    local outcome
    outcome=$(grep -o 'ERROR: *[0-9A-Z]*' "$change_log" | tr -s ' ')
    echo "${outcome:-ok}|$(grep -c 55P03 "$app_log")|$(sort -n "$app_log" | tail -n 1 | cut -d' ' -f1)|$(wc -l <"$app_log")"
    rm -f "$app_log" "$change_log"
}
IFS='|' read -r change3 failed3 slowest3 count3 <<<"$(attempt 3s 999999)"
IFS='|' read -r change1 failed1 slowest1 count1 <<<"$(attempt 1s 999998)"
echo "the DBA's define at lock_wait 3s: $change3; the application's $count3 requests on other keys: $failed3 failed (55P03), slowest $slowest3 ms"
echo "the DBA's define at lock_wait 1s: $change1; the application's $count1 requests on other keys: $failed1 failed (55P03), slowest $slowest1 ms"
[ "$failed3" -gt 0 ] || [ "$failed1" -gt 0 ] || [ "$slowest1" -gt 500 ] || [ "$slowest3" -gt 500 ] &&
    reproduced "a change waits for a tenant's new key with the limit's lock held: $failed3 requests on other keys failed with 55P03, the slowest took $slowest3 ms / $slowest1 ms"
holds "a change never waits for a key's holder while holding the limit's lock"
