#!/usr/bin/env bash
# Finding 91 (medium): review 21's commit check (catalog/written_limits.cpp, check_noted, at PRE_COMMIT) runs
# in the caller's session as the caller, outside the SECURITY DEFINER functions that read the extension's
# tables for it during the call. When an override change reached the session while its transaction ran
# (the invalidation drops the whole override cache), the check reads rate_limit_override again
# (limit_has_overrides for a limit that had none, effective_limit for each key noted of a limit with
# overrides): a role with the default grants has no SELECT on that table, and its COMMIT fails with
# 42501 "permission denied for table rate_limit_override". Not 40001: the client library does not retry
# it, and the transaction's own work is lost. Any override change of any limit of the database (an
# application that sets tiers on plan changes makes them all the time) fails every such transaction in
# flight, whether or not its keys are concerned. With no change at all, a limit with more overrides than
# are cached whole (10,000) fails every tenant transaction that decided more keys of it than the cache keeps
# (10,000 a limit): the keys looked up first are read again at COMMIT.
# Attack: a tenant role (CREATE ROLE ... LOGIN, nothing granted) makes one request on its own key 'k' in a
# transaction that lasts 1 s: (a) of 'api', a limit with an override on another key 'vip', while the DBA
# sets an override of a key of another limit 'b'; (b) of 'plain', a limit without overrides, while the
# DBA sets the limit's first override, on another key 'gold'. The same with 4 tenant sessions making
# autocommit requests for 3 s while the DBA changes another limit's override every 100 ms. (c) Nothing
# changes: the tenant's transaction makes two rate_limit_request_many calls of 6,000 keys each on 'many', a
# limit with 10,050 overrides.
# Expected: every COMMIT succeeds (no key's limit changed; at worst 40001, which is retried), and no
# autocommit request fails. Found: 42501 at the three COMMITs, and among the autocommit requests too.
here=$(dirname "$0")
source "$here/lib.sh"
setup_review review_f91_tenant
export PGOPTIONS="-c client_min_messages=error"
q -c "SELECT rate_limit_define('api', 1000000, '1 hour')" -c "SELECT rate_limit_override('vip', 'api', 10)" \
  -c "SELECT rate_limit_define('b', 100, '1 hour')" -c "SELECT rate_limit_define('plain', 1000000, '1 hour')" >/dev/null || exit 2

until_sleeping() {  # until_sleeping ROLE: the role's session is in pg_sleep (up to 10 s)
    local _
    for _ in $(seq 1 200); do
        [ "$(q -c "SELECT count(*) FROM pg_stat_activity WHERE usename = '$1' AND wait_event = 'PgSleep'")" -ge 1 ] && return 0
        sleep 0.05
    done
    echo "(waited 10 s in vain for $1 to sleep)"
}
# tenant_commit LIMIT CHANGE: the tenant's COMMIT after a request on 'k' of LIMIT, CHANGE made meanwhile
tenant_commit() {
    local log out
    log=$(mktemp)
    q_any -U review_f91_tenant -v VERBOSITY=sqlstate -c "BEGIN" -c "SELECT (rate_limit_request('k', '$1', 1e-6)).allowed" \
        -c "SELECT pg_sleep(1)" -c "COMMIT" >"$log" &
    until_sleeping review_f91_tenant
    q -c "$2" >/dev/null || exit 2
    wait
    out=$(grep -o 'ERROR: *[0-9A-Z]*' "$log" | tr -s ' ' | tail -n 1)
    rm -f "$log"
    echo "${out:-ok}"
}
a=$(tenant_commit api "SELECT rate_limit_override('z', 'b', 5)")
b=$(tenant_commit plain "SELECT rate_limit_override('gold', 'plain', 5)")
q -c "SELECT rate_limit_define('many', 1000000, '1 hour')" \
  -c "INSERT INTO rate_limit_override (limit_name, key, rate) SELECT 'many', 'o' || g, 5 FROM generate_series(1, 10050) g" >/dev/null || exit 2
many=$(q_any -U review_f91_tenant -v VERBOSITY=sqlstate -c "BEGIN" \
      -c "SELECT count(*) FROM rate_limit_request_many(array(SELECT 'a' || g FROM generate_series(1, 6000) g), 'many')" \
      -c "SELECT count(*) FROM rate_limit_request_many(array(SELECT 'b' || g FROM generate_series(1, 6000) g), 'many')" \
      -c "COMMIT" | grep -o 'ERROR: *[0-9A-Z]*' | tr -s ' ')
many=${many:-ok}
detail=$(q_any -U review_f91_tenant -c "BEGIN" -c "SELECT (rate_limit_request('k', 'api', 1e-6)).allowed" \
           -c "SELECT pg_sleep(1)" -c "COMMIT" & sleep 0.5; q -c "SELECT rate_limit_override('z', 'b', 6)" >/dev/null; wait)
echo "a tenant's COMMIT after a request on its own key of 'api' (an override on 'vip'), while the DBA overrides a key of 'b': $a"
echo "a tenant's COMMIT after a request on its own key of 'plain', while the DBA sets the limit's first override (another key): $b"
echo "  ($(grep ERROR <<<"$detail" | head -n 1))"
echo "a tenant's COMMIT after 2 x 6,000 keys of 'many' (10,050 overrides), nothing changed meanwhile: $many"

# 4 tenant sessions, autocommit requests for 3 s; the DBA changes another limit's override every 100 ms.
errors=$(mktemp -d)
end=$(( $(date +%s) + 3 ))
for c in 1 2 3 4; do
    ( while [ "$(date +%s)" -lt "$end" ]; do
          for _ in $(seq 1 100); do echo "SELECT (rate_limit_request('k$c', 'api', 1e-6)).allowed;"; done |
              q_any -U review_f91_tenant -v VERBOSITY=sqlstate >>"$errors/$c"
      done ) &
done
changes=0
while [ "$(date +%s)" -lt "$end" ]; do changes=$((changes + 1)); q -c "SELECT rate_limit_override('z', 'b', $((changes % 5 + 1)))" >/dev/null; sleep 0.1; done
wait
denied=$(cat "$errors"/* | grep -c 42501)
requests=$(cat "$errors"/* | grep -c '^[tf]$')
rm -rf "$errors"
echo "4 tenant sessions, autocommit, 3 s, $changes override changes of another limit: $requests requests decided, $denied failed with 42501"
[ "$a" = "ERROR: 42501" ] || [ "$b" = "ERROR: 42501" ] || [ "$many" = "ERROR: 42501" ] || [ "$denied" -gt 0 ] &&
    reproduced "a tenant's COMMIT fails with 42501 (permission denied for table rate_limit_override) when any override changed while its transaction ran, or when it decided over 10,000 keys of a limit with over 10,000 overrides: $a / $b / $many, $denied autocommit requests"
holds "the commit check of a tenant's transaction never fails for want of privileges"
