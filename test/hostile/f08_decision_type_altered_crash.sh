#!/usr/bin/env bash
# Finding 8 (medium, DBA): altering the composite type rate_limit_decision crashes the server at the next
# request. decision_datum() forms the row from 4 fixed values with whatever descriptor the type has now:
# ALTER ATTRIBUTE ... TYPE makes it treat an int8 as a pointer (SIGSEGV); ADD ATTRIBUTE makes
# heap_form_tuple read values[4] / nulls[4] past the end of 4-element stack arrays (undefined behaviour,
# it happened to print NULL here). The commit promises "any table shape handled or refused with 55000";
# the result type is a shape too.
# Expected: 55000 (or 42804) "rate_limit_decision was altered", never a crash: check natts, no dropped
# attributes and the four types before forming the tuple.
source "$(dirname "$0")/lib.sh"
setup_review

before=$(crash_count)
out=$(q_any <<'SQL'
BEGIN;
ALTER TYPE rate_limit_decision ALTER ATTRIBUTE remaining TYPE text;
SELECT * FROM rate_limit_request('k');
ROLLBACK;
SQL
)
echo "$out"
wait_for_server
if [ "$(crash_count)" -gt "$before" ] || grep -q 'server closed the connection unexpectedly' <<<"$out"; then
    reproduced "a request after ALTER TYPE rate_limit_decision ALTER ATTRIBUTE remaining TYPE text crashed the server"
fi
holds "the altered result type was refused"
