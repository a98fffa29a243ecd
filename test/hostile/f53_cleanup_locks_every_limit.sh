#!/usr/bin/env bash
# Finding 53 (medium-low, careless DBA): rate_limit_cleanup takes every limit's lock (an advisory lock,
# 21068) and keeps it until commit, and a bounded call counts only rows against max_rows, never limits: a
# limit without rows costs nothing. So one call, max_rows => 1 or not, and every batch of
# CALL rate_limit_cleanup_batches() holds a lock for each limit of the database at once. With enough limits
# (40,000 on a default server; 3,000 here, max_locks_per_transaction = 10) the shared lock table runs out:
# every cleanup fails with 53200 "out of shared memory" (the tables are never cleaned again), and while it
# fills the table other sessions' lock requests (a rate_limit_define) fail too.
# Attack: 3,000 limits without rows (defined 100 per transaction), then SELECT rate_limit_cleanup(NULL, 1)
# and CALL rate_limit_cleanup_batches(); also count the locks a bounded call holds.
# Expected: a bounded call holds a bounded number of limit locks (max_rows counts limits visited too, or
# locks are released as a limit is done) and both calls succeed.
# Starts a cluster of its own (own_cluster.sh) with a small lock table.
here=$(dirname "$0")
source "$here/lib.sh"
source "$here/own_cluster.sh"
own_cluster_start -c max_locks_per_transaction=10 -c max_connections=20
export PGDATABASE=postgres
p() { psql -X -q -At -v ON_ERROR_STOP=1 "$@"; }
p -c "CREATE EXTENSION pg_ratelimit" >/dev/null || exit 2
define() {  # limits l$1..l$2, 100 per transaction
    local b
    for b in $(seq "$1" 100 "$2"); do
        echo "SELECT count(rate_limit_define('l' || i, 10, '1 hour')) FROM generate_series($b, $((b + 99))) i;"
    done | p >/dev/null || exit 2
}
define 1 200
held=$(p -c "BEGIN" -c "SELECT FROM rate_limit_cleanup(NULL, 1)" \
         -c "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND objsubid = 21068 AND pid = pg_backend_pid()" -c "COMMIT" 2>&1)
define 201 3000
bounded=$(psql -X -q -At -v VERBOSITY=sqlstate -c "SELECT rate_limit_cleanup(NULL, 1)" 2>&1)
batches=$(psql -X -q -At -v VERBOSITY=sqlstate -c "CALL rate_limit_cleanup_batches()" 2>&1)
echo "limit locks held by one rate_limit_cleanup(NULL, 1) at 200 limits: ${held//$'\n'/ }"
echo "at 3,000 limits: rate_limit_cleanup(NULL, 1): ${bounded//$'\n'/ }; CALL rate_limit_cleanup_batches(): ${batches//$'\n'/ }"
held=$(tail -n 1 <<<"$held")
[ "$held" = 1 ] || reproduced "one rate_limit_cleanup(NULL, 1) held $held limit locks (expected 1)"
[ "$bounded" = 0 ] && [ "$batches" = 0 ] && holds "bounded cleanup works with 3,000 limits"
reproduced "with 3,000 limits every bounded cleanup fails (out of shared memory: one lock per limit, none counted against max_rows)"
