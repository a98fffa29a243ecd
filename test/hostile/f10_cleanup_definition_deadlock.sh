#!/usr/bin/env bash
# Finding 10 (low): rate_limit_cleanup() takes every limit's lock in name order and keeps them until it
# commits; a transaction that redefines several limits takes them in its own order. The two deadlock,
# and the victim may be the DBA's migration (here it is: 40P01 on its second rate_limit_define, the whole
# migration rolled back). Cleanup also blocks, while it waits, every definition of the limits it has
# already passed.
# Expected: a periodic cleanup never aborts or blocks definitions: take each limit's lock with
# ConditionalLockAcquire (LockAcquire(..., dontWait = true)) and skip a limit that is being redefined
# (it is cleaned next time), or release each limit's lock once that limit is done.
source "$(dirname "$0")/lib.sh"
setup_review
log=$(mktemp)

q -c "SELECT rate_limit_define('a', 5, '1 hour'), rate_limit_define('b', 5, '1 hour')" >/dev/null
psql -X -q -At -d "$REVIEW_DB" >"$log" 2>&1 <<'SQL' &
BEGIN;
SELECT 'migration', rate_limit_define('b', 6, '1 hour');
SELECT pg_sleep(3);
SELECT 'migration', rate_limit_define('a', 6, '1 hour');
COMMIT;
SQL
migration=$!
sleep 1
cleanup_out=$(q_any -c "SELECT 'cleanup', rate_limit_cleanup()")
wait "$migration"
cat "$log"
echo "$cleanup_out"
if grep -q 'deadlock detected' <<<"$(cat "$log")$cleanup_out"; then
    rm -f "$log"
    reproduced "rate_limit_cleanup() and a two-limit redefinition deadlocked (40P01)"
fi
rm -f "$log"
holds "no deadlock"
