#!/usr/bin/env bash
# Finding 93 (low-medium; roles granted rate_limit_define): "a transaction that changes the limit itself
# forgets its notes" (written_limits.hpp): its own change rewrote its rows. But its change rewrites them
# from the definition in force when the change runs, which is not the one its earlier requests decided
# under if another transaction redefined the limit in between (that change could not see the rows: their
# first versions were not committed). The rows written under the first definition are then read as if
# written under the second, and nothing fails at COMMIT. The same when the transaction's own change is
# undone by ROLLBACK TO SAVEPOINT (or a PL/pgSQL EXCEPTION block) after a request in that savepoint:
# note_written_limit, called again after the forget, replaces the limit's note with one of the
# savepoint's level, and the savepoint's abort drops it with everything noted since the transaction began.
# Attack: 'api' is 1000 per hour. An administration transaction (a role granted rate_limit_define, as the
# README suggests) takes 990 of a new key 'k', then (a) runs rate_limit_define('api', 1000, '1 hour') (an
# idempotent "make sure the limit is defined" step); or (b) in a savepoint runs that define and one more
# request, then rolls back to the savepoint. Meanwhile the DBA redefines 'api' to 10 per hour
# (proportional) and commits first.
# Expected: (a) 10 left for 'k' (990 of 1000 used: 0.1 of 10 after the DBA's change, 10 of 1000 again after
# the transaction's own), or 40001 at COMMIT; (b) nothing left (0.1 of 10), or 40001 at COMMIT.
# Found: both COMMITs succeed; (a) 1000 admitted on 'k' at once (its 10 units left read as 10 of 10, a full
# key, then scaled to 1000 of 1000), (b) 10 (10 units left of 1000 read as 10 of 10).
here=$(dirname "$0")
source "$here/lib.sh"
setup_review review_f93_admin
export PGOPTIONS="-c client_min_messages=error"
q -c "GRANT EXECUTE ON FUNCTION rate_limit_define TO review_f93_admin" >/dev/null || exit 2

until_sleeping() {  # until_sleeping ROLE: the role's session is in pg_sleep (up to 10 s)
    local _
    for _ in $(seq 1 200); do
        [ "$(q -c "SELECT count(*) FROM pg_stat_activity WHERE usename = '$1' AND wait_event = 'PgSleep'")" = 1 ] && return 0
        sleep 0.05
    done
    echo "(waited 10 s in vain for $1 to sleep)"
}
# run STEPS...: the administration transaction (990 of 'k', sleep, STEPS, COMMIT), the DBA's redefinition
# during its sleep; prints the COMMIT's outcome and how many of 2000 requests on 'k' are then admitted.
run() {
    q -c "SELECT rate_limit_define('api', 1000, '1 hour')" >/dev/null || exit 2
    local log steps=() step out
    for step in "$@"; do steps+=(-c "$step"); done
    log=$(mktemp)
    q_any -U review_f93_admin -v VERBOSITY=sqlstate -c "BEGIN" -c "SELECT (rate_limit_request('k', 'api', 990)).allowed" \
        -c "SELECT pg_sleep(1)" "${steps[@]}" -c "COMMIT" >"$log" &
    until_sleeping review_f93_admin
    local dba
    dba=$(q_any -v VERBOSITY=sqlstate -c "SELECT rate_limit_define('api', 10, '1 hour')" | grep -o 'ERROR: *[0-9A-Z]*' | tr -s ' ')
    wait
    if [ -n "$dba" ]; then  # the DBA's change could not commit while the transaction ran: nothing to misread
        rm -f "$log"
        echo "the DBA's define failed ($dba)|0"
        q -c "SELECT rate_limit_drop('api')" >/dev/null
        return
    fi
    out=$(grep -o 'ERROR: *[0-9A-Z]*' "$log" | tr -s ' ' | tail -n 1)
    rm -f "$log"
    echo "${out:-ok}|$(q -c "SELECT count(*) FILTER (WHERE (rate_limit_request('k', 'api')).allowed) FROM generate_series(1, 2000)")"
    q -c "SELECT rate_limit_drop('api')" >/dev/null
}
a=$(run "SELECT rate_limit_define('api', 1000, '1 hour')")
b=$(run "SAVEPOINT s" "SELECT rate_limit_define('api', 1000, '1 hour')" "SELECT (rate_limit_request('other', 'api')).allowed" "ROLLBACK TO s")
echo "an administration transaction takes 990 of 1000 of a new key; the DBA redefines the limit to 10 per hour meanwhile;"
echo "  (a) then the transaction defines the limit (1000 per hour) again, COMMIT: ${a%|*}; then ${a#*|} admitted on the key (expected 10)"
echo "  (b) then it does so in a savepoint with one more request, ROLLBACK TO SAVEPOINT, COMMIT: ${b%|*}; then ${b#*|} admitted (expected 0)"
[ "${a%|*}" = ok ] && [ "${a#*|}" -gt 10 ] || { [ "${b%|*}" = ok ] && [ "${b#*|}" -gt 0 ]; } &&
    reproduced "a transaction whose own change of the limit forgot its notes commits rows written under a definition another change replaced: ${a#*|} admitted instead of 10, ${b#*|} instead of 0"
holds "a transaction's own change never hides rows it wrote under a definition another change replaced"
