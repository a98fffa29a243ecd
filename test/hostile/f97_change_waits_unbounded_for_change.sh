#!/usr/bin/env bash
# Finding 97 (low; roles that manage limits; already so at e9c8ea9): promise 10 of RELIABILITY.md: "a call
# never waits longer than pg_ratelimit.lock_wait (or lock_timeout) for another transaction's hold on a key
# or on its limit; then 55P03, never a denial and never a hang". rate_limit_define and rate_limit_drop
# first lock the limit's row of rate_limit_config (SELECT ... FOR UPDATE, DELETE) without any bound, before
# any wait lock_wait bounds; a transaction that changed the limit (rate_limit_override of any of its keys,
# rate_limit_define, an UPDATE) holds that row (or a lock on it) until it ends. So a redefinition or a
# drop behind such a transaction waits for as long as it stays open: an application that sets tiers with
# rate_limit_override in transactions of its own and leaves one open, or a prepared transaction that set an
# override (the README's "Waiting for other transactions" says changes of the limit "fail with 55P03" while
# a prepared transaction holds the limit: here they hang until ROLLBACK PREPARED). Only rate_limit_override
# behind rate_limit_override is bounded (55P03 after lock_wait).
# Attack: 'api' is defined; a transaction sets rate_limit_override('gold', 'api', 10) and stays open 4 s (a),
# or is prepared (b); the DBA runs rate_limit_define('api', ...) and rate_limit_drop('api') with the default
# lock_wait (1 s) and statement_timeout = 3 s.
# Expected: 55P03 after about 1 s (lock_wait), as rate_limit_override does. Found: each waits until
# statement_timeout (57014 after 3 s), or until the holder ends.
here=$(dirname "$0")
source "$here/lib.sh"
setup_review
end_prepared() { psql -X -q -d "$REVIEW_DB" -c "ROLLBACK PREPARED 'review_f97'" >/dev/null 2>&1; cleanup_review; }
trap end_prepared EXIT
export PGOPTIONS="-c client_min_messages=error"
q -c "SELECT rate_limit_define('api', 1000, '1 hour')" >/dev/null || exit 2

attempt() {  # attempt CHANGE: its outcome and how long it waited (ms)
    local t0 out
    t0=$(date +%s%N)
    out=$(q_any -v VERBOSITY=sqlstate -c "SET statement_timeout = '3s'" -c "BEGIN" -c "$1" -c "ROLLBACK" | grep -o 'ERROR: *[0-9A-Z]*' | tr -s ' ')
    echo "${out:-ok} after $(( ($(date +%s%N) - t0) / 1000000 )) ms"
}
q -c "BEGIN" -c "SELECT rate_limit_override('gold', 'api', 10)" -c "SELECT pg_sleep(8)" -c "ROLLBACK" >/dev/null &
sleep 0.5
open_define=$(attempt "SELECT rate_limit_define('api', 999, '1 hour')")
open_drop=$(attempt "SELECT rate_limit_drop('api')")
open_override=$(attempt "SELECT rate_limit_override('silver', 'api', 5)")
wait
if [ "$(q -c "SHOW max_prepared_transactions")" -gt 0 ]; then
    q -c "BEGIN" -c "SELECT rate_limit_override('gold', 'api', 10)" -c "PREPARE TRANSACTION 'review_f97'" >/dev/null || exit 2
    prepared_define=$(attempt "SELECT rate_limit_define('api', 999, '1 hour')")
    prepared_drop=$(attempt "SELECT rate_limit_drop('api')")
    q -c "ROLLBACK PREPARED 'review_f97'" >/dev/null
else
    prepared_define="(max_prepared_transactions = 0)" prepared_drop=$prepared_define
fi
echo "behind an open transaction that set an override: define $open_define, drop $open_drop (override: $open_override)"
echo "behind a prepared transaction that set an override: define $prepared_define, drop $prepared_drop"
grep -q 57014 <<<"$open_define $open_drop $prepared_define $prepared_drop" &&
    reproduced "a redefinition or drop waits without bound for another transaction's change of the limit (57014 at statement_timeout instead of 55P03 at lock_wait)"
holds "a change waits for another change at most pg_ratelimit.lock_wait"
