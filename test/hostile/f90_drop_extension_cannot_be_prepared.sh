#!/usr/bin/env bash
# Finding 90 (low): issue 21's object access hook (memory_state.cpp on_object_access) queues a purge of the
# database's memory entries for every DROP of the pg_ratelimit extension (DROP EXTENSION, DROP SCHEMA ...
# CASCADE, DROP OWNED BY its owner), whether or not the database has any memory limit or entry, and the
# pending purge makes PREPARE TRANSACTION fail: "cannot PREPARE a transaction that dropped or redefined a
# memory rate limit". In 0.1.0 a transaction that dropped the extension could be prepared (a two-phase
# migration tool, a transaction manager that always prepares); now it cannot, with a message about memory
# limits in a database that has none, and the README does not say so (it names only the dropping or
# redefining of memory limits).
# Attack: a database with pg_ratelimit and only a durable limit: BEGIN; DROP EXTENSION pg_ratelimit;
# PREPARE TRANSACTION; COMMIT PREPARED. The same with DROP SCHEMA ... CASCADE of the extension's schema.
# Expected: both prepare and commit (nothing of memory to remove), or the README says that dropping the
# extension cannot be prepared.
here=$(dirname "$0")
source "$here/lib.sh"
setup_review
end_prepared() {
    local gid
    for gid in review_f90_extension review_f90_schema; do
        psql -X -q -d "$REVIEW_DB" -c "ROLLBACK PREPARED '$gid'" >/dev/null 2>&1
    done
    cleanup_review
}
trap end_prepared EXIT
[ "$(q -c "SHOW max_prepared_transactions")" -gt 0 ] || { echo "needs max_prepared_transactions > 0"; exit 2; }
q -c "SELECT rate_limit_define('api', 10, '1 hour')" -c "SELECT count(*) FROM rate_limit_request_many(ARRAY['a', 'b'], 'api')" >/dev/null || exit 2
extension=$(q_any -v VERBOSITY=sqlstate -c "BEGIN" -c "DROP EXTENSION pg_ratelimit" -c "PREPARE TRANSACTION 'review_f90_extension'" \
              -c "COMMIT PREPARED 'review_f90_extension'" | tr '\n' ' ')
left=$(q -c "SELECT count(*) FROM pg_extension WHERE extname = 'pg_ratelimit'")
# The same through DROP SCHEMA ... CASCADE (the extension in a schema of its own).
q -c "DROP EXTENSION IF EXISTS pg_ratelimit" -c "CREATE SCHEMA limits" -c "CREATE EXTENSION pg_ratelimit SCHEMA limits" >/dev/null || exit 2
schema=$(q_any -v VERBOSITY=sqlstate -c "BEGIN" -c "DROP SCHEMA limits CASCADE" -c "PREPARE TRANSACTION 'review_f90_schema'" \
           -c "COMMIT PREPARED 'review_f90_schema'" 2>&1 | grep -v NOTICE | tr '\n' ' ')
documented=$(grep -ci 'prepare[^ ]* .*drop[^ ]* the extension\|DROP EXTENSION[^.]*PREPARE' "$here/../../README.md")
echo "no memory limit; DROP EXTENSION then PREPARE, COMMIT PREPARED: [$extension] (extension left: $left)"
echo "DROP SCHEMA ... CASCADE then PREPARE, COMMIT PREPARED: [$schema]; README lines on it: $documented"
[[ "$extension$schema" == *0A000* ]] && [ "$documented" = 0 ] &&
    reproduced "dropping pg_ratelimit can no longer be prepared (0A000, 'dropped or redefined a memory rate limit') in a database with no memory limit, undocumented"
holds "a transaction that drops pg_ratelimit can be prepared, or the README says it cannot"
