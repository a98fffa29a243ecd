#!/usr/bin/env bash
# Finding 87 (medium): since issue 21 every transaction that requests a key of a table limit holds the
# limit's lock (RowShareLock) until it ends, and rate_limit_define, rate_limit_override, rate_limit_drop and
# any DML on rate_limit_config wait for ExclusiveLock on it. PostgreSQL queues a lock request behind a
# waiting conflicting one: while a redefinition or an override waits, every new request on ANY key of the
# limit waits behind it. So one tenant (any login role) that leaves a transaction open after one request
# on its own key turns each such change into a stall of the whole limit for pg_ratelimit.lock_wait, and
# the change fails (55P03) until the tenant's transaction ends. The README's advice for a redefinition
# blocked so ("set the setting higher for that one session to wait longer") makes it worse: the other
# tenants' requests then fail with 55P03 ("rate limit ... is held by another transaction") for as long.
# Per-key tier changes (rate_limit_override of one key, which an application may run on every plan
# change) take the same lock for the whole limit.
# Attack: a tenant role: BEGIN; rate_limit_request('tenant', 'api', 1e-9); and nothing more. An
# application makes a request every 50 ms (autocommit) on other keys of 'api'; the DBA runs
# rate_limit_override('vip', 'api', 10) at the default lock_wait, then with lock_wait = 3s.
# Expected: the other keys' requests are decided as usual (no 55P03, no request stalled by a change that
# cannot proceed), and a one-key override does not depend on unrelated keys' transactions.
# Found: each attempt stalls every request on the limit (about 1 s at the default), and with lock_wait =
# 3s requests fail with 55P03; the override fails both times.
here=$(dirname "$0")
source "$here/lib.sh"
setup_review review_f87_tenant review_f87_app
export PGOPTIONS="-c client_min_messages=error"
q -c "SELECT rate_limit_define('api', 1000000, '1 hour')" >/dev/null || exit 2

attempt() {  # attempt LOCK_WAIT: the override's outcome, the application's failures, its slowest request (ms)
    q -U review_f87_tenant -c "BEGIN" -c "SELECT allowed FROM rate_limit_request('tenant', 'api', 1e-9)" \
      -c "SELECT pg_sleep(${1%s} + 2)" -c "ROLLBACK" >/dev/null &
    local tenant=$! app_log
    app_log=$(mktemp)
    sleep 0.5
    (   for i in $(seq 1 $(( (${1%s} + 2) * 10 ))); do
            local t0 out
            t0=$(date +%s%N)
            out=$(q_any -U review_f87_app -v VERBOSITY=sqlstate -c "SELECT (rate_limit_request('user$((i % 5))', 'api')).allowed")
            echo "$(( ($(date +%s%N) - t0) / 1000000 )) $out"
            sleep 0.05
        done >"$app_log" ) &
    local app=$!
    sleep 0.5
    local override
    override=$(q_any -v VERBOSITY=sqlstate -c "SET pg_ratelimit.lock_wait = '$1'" -c "SELECT rate_limit_override('vip', 'api', 10)" | tr '\n' ' ')
    wait $app $tenant
    echo "${override:-ok}|$(grep -c 55P03 "$app_log")|$(sort -n "$app_log" | tail -n 1 | cut -d' ' -f1)|$(wc -l <"$app_log")"
    rm -f "$app_log"
}
IFS='|' read -r override1 failed1 slowest1 count1 <<<"$(attempt 1s)"
IFS='|' read -r override3 failed3 slowest3 count3 <<<"$(attempt 3s)"
echo "override at lock_wait 1s: $override1; the application's $count1 requests on other keys: $failed1 failed (55P03), slowest $slowest1 ms"
echo "override at lock_wait 3s: $override3; the application's $count3 requests on other keys: $failed3 failed (55P03), slowest $slowest3 ms"
[ "$failed1" -gt 0 ] || [ "$failed3" -gt 0 ] || [ "$slowest1" -gt 500 ] || [ "$slowest3" -gt 500 ] &&
    reproduced "a tenant's open transaction turns a redefinition of its limit into a stall of every writer: $failed3 requests on other keys failed with 55P03, the slowest took $slowest1 ms / $slowest3 ms"
holds "a change waiting for a tenant's open transaction no longer stalls the limit's other writers"
