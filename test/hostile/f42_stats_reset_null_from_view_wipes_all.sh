#!/usr/bin/env bash
# Finding 42 (low, careless user): rate_limit_stats_reset(limit_name) is not STRICT and reads NULL as
# "every row": the natural query that resets the rows the view lists, filtered as one likes, wipes every
# row of the database (and the overflow row of every database) as soon as the overflow row matches, since
# the view's own overflow row has limit_name NULL. A NULL bound by a client (an unset variable) does the same.
# Attack: pg_ratelimit.stats_limits = 10; 11 limits (one in the overflow row, which saw denials); then the
# DBA resets only the limits that saw denials:
#   SELECT rate_limit_stats_reset(limit_name) FROM rate_limit_stats WHERE denied > 0
# Expected: the rows without denials keep their counts (NULL refused, or meaning nothing: an explicit
# rate_limit_stats_reset() without argument is the way to wipe everything).
# Starts a cluster of its own (own_cluster.sh).
here=$(dirname "$0")
source "$here/lib.sh"
source "$here/own_cluster.sh"
own_cluster_start -c pg_ratelimit.stats_limits=10
export PGDATABASE=postgres PGOPTIONS="-c client_min_messages=error"
p() { psql -X -q -At -v ON_ERROR_STOP=1 "$@"; }
p -c "CREATE EXTENSION pg_ratelimit" -c "SELECT rate_limit_define('l' || i, 10, '1 hour') FROM generate_series(1, 10) i" \
  -c "SELECT rate_limit_define('tight', 1, '1 hour')" >/dev/null || exit 2
p -c "SELECT count(*) FROM (SELECT rate_limit_request('k', 'l' || i) FROM generate_series(1, 10) i) s" \
  -c "SELECT count(*) FROM (SELECT rate_limit_request('k', 'tight') FROM generate_series(1, 3)) s" >/dev/null || exit 2
before=$(p -c "SELECT count(*) FILTER (WHERE requests > 0 AND denied = 0) FROM rate_limit_stats")
p -c "SELECT rate_limit_stats_reset(limit_name) FROM rate_limit_stats WHERE denied > 0" >/dev/null 2>&1
after=$(p -c "SELECT count(*) FILTER (WHERE requests > 0 AND denied = 0) FROM rate_limit_stats")
echo "rows without denials, with counts: $before before, $after after resetting the rows with denials"
[ "$after" = "$before" ] && holds "resetting the listed rows leaves the others"
reproduced "resetting the rows with denials (the overflow row among them: limit_name NULL) wiped $((before - after)) of $before other rows"
