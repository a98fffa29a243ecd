#!/usr/bin/env bash
# Finding 70 (low-medium): a marker (README "Releasing in an error path") lasts until the end of the
# transaction after the one that left it, and every statement outside a transaction block is a
# transaction: the SET/RESET that an error path does after a 57014 (statement_timeout), a row it logs, a
# pooler's check query (pgbouncer's server_check_query "select 1") -- any one statement between the
# failure and the release spends the marker, and the release then frees *another* lease the session
# holds (true). The README's "So the usual cleanup, a release in an EXCEPTION handler or a client's catch,
# frees nothing else" holds only for a catch whose very next statement is the release.
# Attack: N = 2 (and N = 10,000 for the timeout). The session holds job A's session lease. Job B's acquire
# fails: (a) statement_timeout during the probes (57014), the error path resets the timeout, then
# releases; (b) the statement after the acquire fails, the error path logs the failure to a table, then
# releases; (c) the statement fails, the pooler's check query runs, then the release; (d) N = 3, one
# statement takes two leases and fails, the error path releases each in its own statement (the second
# release comes two transactions after the failure).
# Expected: the error path's release frees nothing (false) and job A's lease stays (1 held).
# Suggested fix: let a marker live until the session's next acquire or release of its key (or for the
# limit's period), not a count of transactions; at the least, say in the README that the release must be
# the first statement after the failure.
# Fixed: a marker lasts until a release of its key takes it, the session's next session acquire of the
# key, or the limit's period (as the lease would have), whatever statements run in between.
here=$(dirname "$0")
source "$here/lib.sh"
setup_review
trap cleanup_review EXIT
export PGOPTIONS="-c client_min_messages=error"
q -c "SELECT rate_limit_define('jobs', rate => 2, period => '1 hour', algorithm => 'concurrency')" \
  -c "SELECT rate_limit_define('three', rate => 3, period => '1 hour', algorithm => 'concurrency')" \
  -c "SELECT rate_limit_define('big', rate => 10000, period => '1 hour', algorithm => 'concurrency')" \
  -c "CREATE TABLE job_log (at timestamptz DEFAULT now(), what text)" >/dev/null || exit 2
held="SELECT 'held', count(*) FROM pg_locks WHERE objsubid = 21070 AND pid = pg_backend_pid();"
failures=()
check() {
    local out
    out=$(printf '%s\n%s\n%s\n' "SELECT 'A', allowed FROM rate_limit_acquire('acme', '$2', 'session');" "$3" "$held" |
        q_any -v VERBOSITY=sqlstate 2>&1 | tr '\n' ' ')
    grep -q "released|f held|1 $" <<<"$out" || failures+=("$1: $out")
}
check "statement_timeout during the probes, RESET, release" big "SET statement_timeout = '5ms';
SELECT 'B', allowed FROM rate_limit_acquire('acme', 'big', 'session');
RESET statement_timeout;
SELECT 'released', rate_limit_release('acme', 'big');"
check "statement failing after the acquire, the failure logged, release" jobs "SELECT a.allowed, 1 / (a.remaining - a.remaining) FROM rate_limit_acquire('acme', 'jobs', 'session') a;
INSERT INTO job_log (what) VALUES ('job B failed');
SELECT 'released', rate_limit_release('acme', 'jobs');"
check "statement failing after the acquire, a pooler's check query, release" jobs "SELECT a.allowed, 1 / (a.remaining - a.remaining) FROM rate_limit_acquire('acme', 'jobs', 'session') a;
select 1;
SELECT 'released', rate_limit_release('acme', 'jobs');"
check "two leases of one failed statement, the error path releasing each in its own statement" three "SELECT 1 / (count(*) - 2) FROM (SELECT rate_limit_acquire('acme', 'three', 'session') FROM generate_series(1, 2)) s;
SELECT 'released', rate_limit_release('acme', 'three');
SELECT 'released', rate_limit_release('acme', 'three');"
[ ${#failures[@]} -eq 0 ] && holds "an error path's release after another statement frees nothing the session holds (4 cases)"
printf '%s\n' "${failures[@]}"
reproduced "${#failures[@]} of 4 case(s): one statement between the failure and the error path's release spent the marker; the release freed job A's lease"
