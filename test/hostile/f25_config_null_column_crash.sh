#!/usr/bin/env bash
# Finding 25 (medium, DBA): a NULL in rate_limit_config's new jitter column crashes the server (SIGSEGV;
# the postmaster ends every session and reinitialises, and memory limits' state is lost). limit_cache.cpp limit_read() reads
# column 10 with DatumGetIntervalP() without looking at isnull; the column is NOT NULL, but nothing
# checks that it still is (config_relation.cpp checks the columns' names and types only, f09). A DBA who
# relaxes the constraint (ALTER TABLE rate_limit_config ALTER COLUMN jitter DROP NOT NULL, say to load
# rows from an older export without the column) and leaves a NULL there crashes the server at the next
# request of that limit. The older columns read the same way crash too: algorithm, period and storage
# (TextDatumGetCString / DatumGetIntervalP of a null Datum).
# Expected: no crash; an ERROR with a SQLSTATE (55000 naming the column, or 22004) for each NULL column.
source "$(dirname "$0")/lib.sh"
setup_review

q -c "SELECT rate_limit_define('api', 5, '1 minute', jitter => '1 second')" >/dev/null || exit 2
crashed=()
for column in jitter algorithm period storage; do
    before=$(crash_count)
    out=$(q_any -v VERBOSITY=sqlstate <<SQL
BEGIN;
ALTER TABLE rate_limit_config ALTER COLUMN $column DROP NOT NULL;
UPDATE rate_limit_config SET $column = NULL WHERE name = 'api';
SELECT 'decided', allowed FROM rate_limit_request('k', 'api');
ROLLBACK;
SQL
)
    echo "NULL $column: $(tr '\n' ' ' <<<"$out")"
    if grep -q 'server closed the connection unexpectedly' <<<"$out"; then
        # Let the postmaster notice the crash and restart before the next case connects.
        for _ in $(seq 1 20); do [ "$(crash_count)" -gt "$before" ] && break; sleep 0.5; done
        sleep 2
    fi
    wait_for_server || exit 2
    if [ "$(crash_count)" -gt "$before" ] || grep -q 'server closed the connection unexpectedly' <<<"$out"; then
        crashed+=("$column")
    fi
done
[ ${#crashed[@]} -gt 0 ] &&
    reproduced "a request of a limit whose rate_limit_config row holds NULL crashed the server (columns: ${crashed[*]})"
holds "NULL columns of rate_limit_config are refused with an ERROR"
