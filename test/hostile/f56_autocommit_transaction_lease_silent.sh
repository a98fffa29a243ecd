#!/usr/bin/env bash
# Finding 56 (low, careless user): rate_limit_acquire with the default scope ('transaction') outside a
# transaction block -- psql's or any driver's autocommit, which is how most callers run a SELECT -- answers
# allowed = t, remaining = N - 1, and the lease is gone before the caller reads the answer: the work that
# follows in later statements runs without a slot, and N such callers become any number. Nothing says so
# (no WARNING, no NOTICE), whereas PostgreSQL warns for the like (SET LOCAL outside a transaction block:
# "SET LOCAL can only be used in transaction blocks"). The README's example wraps it in BEGIN ... COMMIT,
# but the function's own comment and the function list only say "until the transaction ends".
# Attack: N = 1; two autocommit calls from two sessions one after the other, the first one's "export"
# still running.
# Expected: a WARNING (or an error) when a transaction lease is taken outside a transaction block, so a
# careless caller learns it holds nothing. (Both calls being allowed is then the documented behaviour.)
here=$(dirname "$0")
source "$here/lib.sh"
setup_review
q -c "SELECT rate_limit_define('exports', rate => 1, period => '1 hour', algorithm => 'concurrency')" >/dev/null || exit 2
first=$(psql -X -At -d "$REVIEW_DB" -c "SELECT allowed, remaining FROM rate_limit_acquire('acme', 'exports')" 2>&1)
second=$(psql -X -At -d "$REVIEW_DB" -c "SELECT allowed, remaining FROM rate_limit_acquire('acme', 'exports')" 2>&1)
echo "first caller (autocommit): $(tr '\n' ' ' <<<"$first"); second caller: $(tr '\n' ' ' <<<"$second")"
grep -q -E 'WARNING|NOTICE|ERROR' <<<"$first" && holds "an autocommit transaction lease is flagged to its caller"
reproduced "in autocommit, acquire said '$(tail -n 1 <<<"$first")' and held nothing: the second caller got the only slot too, and no one was told"
