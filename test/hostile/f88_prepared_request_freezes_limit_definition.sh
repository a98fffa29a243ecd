#!/usr/bin/env bash
# Finding 88 (low; where max_prepared_transactions > 0): a transaction that wrote a key of a table limit
# holds the limit's lock (RowShareLock, issue 21) until it ends, and PREPARE TRANSACTION hands that lock to
# the prepared transaction. Any login role can prepare its own transaction (no privilege needed): one
# request on a key of its own, PREPARE TRANSACTION, disconnect. From then on every rate_limit_define,
# rate_limit_override, rate_limit_drop and UPDATE of rate_limit_config of that limit fails with 55P03
# ("rate limit ... is held by another transaction"), whatever pg_ratelimit.lock_wait, until a superuser
# finds and rolls back the prepared transaction; each attempt also stalls the limit's writers (f87).
# Nothing ends it: idle_in_transaction_session_timeout, the README's remedy for holders, does not apply to
# prepared transactions, and the README's "Waiting for other transactions" does not mention them (in
# 0.1.0 only a redefinition that had to rewrite the prepared key itself was affected).
# Attack: a tenant role prepares a transaction after rate_limit_request('mine', 'api', 1e-9); the session
# timeout for idle transactions is 200 ms; the DBA redefines, overrides, drops, UPDATEs the limit.
# Expected: the changes go through (the tenant's key alone waits for its prepared transaction), or at
# least the README says that a prepared transaction blocks every change of the limits it wrote, and how
# to find and end it (pg_prepared_xacts, ROLLBACK PREPARED).
here=$(dirname "$0")
source "$here/lib.sh"
setup_review review_f88_tenant
end_prepared() { psql -X -q -d "$REVIEW_DB" -c "ROLLBACK PREPARED 'review_f88'" >/dev/null 2>&1; cleanup_review; }
trap end_prepared EXIT
export PGOPTIONS="-c client_min_messages=error"
[ "$(q -c "SHOW max_prepared_transactions")" -gt 0 ] || { echo "needs max_prepared_transactions > 0"; exit 2; }
q -c "SELECT rate_limit_define('api', 1000000, '1 hour')" -c "ALTER DATABASE $REVIEW_DB SET idle_in_transaction_session_timeout = '200ms'" >/dev/null || exit 2
q -U review_f88_tenant -c "BEGIN" -c "SELECT allowed FROM rate_limit_request('mine', 'api', 1e-9)" -c "PREPARE TRANSACTION 'review_f88'" >/dev/null || exit 2
sleep 1
got=$(q_any -v VERBOSITY=sqlstate -c "SET pg_ratelimit.lock_wait = '200ms'" \
        -c "SELECT 'define', rate_limit_define('api', 10, '1 hour')" \
        -c "SELECT 'override', rate_limit_override('vip', 'api', 10)" \
        -c "UPDATE rate_limit_config SET rate = 10 WHERE name = 'api'" \
        -c "SELECT 'drop', rate_limit_drop('api')" | tr '\n' ' ')
other=$(q -c "SELECT (rate_limit_request('other', 'api')).allowed")
documented=$(awk '/^### Waiting for other transactions/,/^### Shadow mode/' "$here/../../README.md" | grep -ci 'prepared')
echo "after a tenant's PREPARE TRANSACTION (idle_in_transaction_session_timeout 200 ms, 1 s later): define, override, UPDATE, drop: $got"
echo "another key's request: $other; the README's 'Waiting for other transactions' mentions prepared transactions: $documented time(s)"
[ "$(grep -o 55P03 <<<"$got" | wc -l)" -eq 4 ] && [ "$documented" = 0 ] &&
    reproduced "a tenant's prepared transaction makes every change of the limit fail (55P03) until a superuser rolls it back, undocumented"
holds "a prepared transaction no longer freezes its limits' definitions unnoticed"
