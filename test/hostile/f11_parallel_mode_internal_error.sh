#!/usr/bin/env bash
# Finding 11 (low): called in a parallel worker (from a wrapper its author wrongly marked PARALLEL SAFE,
# with debug/force_parallel_mode, a user setting), rate_limit_check and rate_limit_request fail with
# the internal error XX000 "cannot update SecondarySnapshot during a parallel operation"
# (limit_lookup's GetLatestSnapshot), instead of a clear error. No crash, nothing written.
# Expected: a clear error with a proper SQLSTATE at entry (e.g. 0A000 "pg_ratelimit functions cannot
# run in a parallel worker", checked with IsInParallelMode() in call_context).
source "$(dirname "$0")/lib.sh"
setup_review

out=$(q_any <<'SQL'
CREATE FUNCTION wrapped_check(k text) RETURNS boolean LANGUAGE plpgsql PARALLEL SAFE
    AS $$ BEGIN RETURN (rate_limit_check(k)).allowed; END $$;
SET force_parallel_mode = on;
\set VERBOSITY verbose
SELECT wrapped_check('k');
SQL
)
echo "$out"
grep -q 'XX000' <<<"$out" && reproduced "XX000 from a call in a parallel worker"
holds "no internal error in a parallel worker"
