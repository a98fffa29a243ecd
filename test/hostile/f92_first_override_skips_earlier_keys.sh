#!/usr/bin/env bash
# Finding 92 (medium-low): the commit check of review 21's fix (catalog/written_limits.cpp) checks each key's
# override only for keys it noted, and a limit notes its keys only while it has overrides
# (key_limit.cpp: note_written_key when the key is overridden or limit_has_overrides). For a limit without
# any override, the check instead compares override_invalidations() at commit with the count seen when the
# limit was noted ("keys == nullptr" branch). But as soon as the transaction makes one more call on the
# limit after the limit's first override arrived, that call notes its key (the limit now has overrides):
# `keys` is no longer null, the branch is skipped, and only the keys noted since are compared. The key
# written before the override, which the override did not rewrite (its first row was not committed, so
# rate_limit_override could not see it), is never checked: the transaction commits, and the key's numbers,
# written under the limit, are read under the override.
# Attack: a tenant (any login role) takes 990 of a new key 'k' of 'api' (1000 per hour) in a transaction;
# meanwhile the DBA overrides 'k' to 10 per hour (rescale proportional, the default); the tenant makes one
# more request on the limit (on another key, or on 'k' itself) and commits. Control: the same transaction
# without the second request fails at COMMIT (40001, or 42501 in a tenant's session: f91), so it is undone.
# Expected: 40001 at COMMIT in every case (or, had it committed, 10 left of 1000, i.e. 0.1 of 10: nothing
# more admitted on 'k' this hour). Found: the COMMIT succeeds and 'k' admits 10 more at once: a whole
# capacity of the override over what either order allows.
here=$(dirname "$0")
source "$here/lib.sh"
setup_review review_f92_tenant
export PGOPTIONS="-c client_min_messages=error"

until_sleeping() {  # until_sleeping ROLE: the role's session is in pg_sleep (up to 10 s)
    local _
    for _ in $(seq 1 200); do
        [ "$(q -c "SELECT count(*) FROM pg_stat_activity WHERE usename = '$1' AND wait_event = 'PgSleep'")" = 1 ] && return 0
        sleep 0.05
    done
    echo "(waited 10 s in vain for $1 to sleep)"
}

# run SECOND: the tenant's transaction (990 of 'k', the DBA's override meanwhile, then SECOND, COMMIT);
# prints the COMMIT's outcome (ok or the SQLSTATE) and how many of 20 requests on 'k' are admitted after it.
run() {
    q -c "SELECT rate_limit_define('api', 1000, '1 hour')" >/dev/null || exit 2
    local log
    log=$(mktemp)
    q_any -U review_f92_tenant -v VERBOSITY=sqlstate -c "BEGIN" -c "SELECT (rate_limit_request('k', 'api', 990)).allowed" \
        -c "SELECT pg_sleep(1)" ${1:+-c "$1"} -c "COMMIT" >"$log" &
    until_sleeping review_f92_tenant
    q -c "SELECT rate_limit_override('k', 'api', 10)" >/dev/null || exit 2
    wait
    local outcome
    outcome=$(grep -o 'ERROR: *[0-9A-Z]*' "$log" | tr -s ' ' | tail -n 1)
    rm -f "$log"
    echo "${outcome:-ok}|$(q -c "SELECT count(*) FILTER (WHERE (rate_limit_request('k', 'api')).allowed) FROM generate_series(1, 20)")"
    q -c "SELECT rate_limit_drop('api')" >/dev/null
}
control=$(run "")
other=$(run "SELECT (rate_limit_request('other', 'api')).allowed")
same=$(run "SELECT (rate_limit_request('k', 'api')).allowed")
echo "a tenant's transaction takes 990 of 1000 of a new key; the DBA overrides the key to 10 per hour meanwhile:"
echo "  nothing more, COMMIT: ${control%|*} (then ${control#*|} of 20 admitted on the key: the transaction was undone)"
echo "  one more request on another key, COMMIT: ${other%|*}; then ${other#*|} of 20 admitted on the key"
echo "  one more request on the key itself, COMMIT: ${same%|*}; then ${same#*|} of 20 admitted on the key"
# (A COMMIT that succeeds with nothing left on the key is correct too: the override then rewrote the key.)
[ "${control%|*}" != ok ] || [ "${control#*|}" = 0 ] || { echo "unexpected control: $control"; exit 2; }
[ "${other%|*}" = ok ] && [ "${other#*|}" -gt 0 ] || { [ "${same%|*}" = ok ] && [ "${same#*|}" -gt 0 ]; } &&
    reproduced "a key written before its limit's first override commits unchecked once the transaction calls the limit again: ${other#*|} (another key) / ${same#*|} (the same key) admitted where 0 are left"
holds "a key written before its limit's first override is never read under the override unrewritten"
