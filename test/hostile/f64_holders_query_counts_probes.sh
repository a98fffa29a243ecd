#!/usr/bin/env bash
# Finding 64 (low): the README's "Who holds leases" query (pg_locks, objsubid 21070 = session lease,
# granted) also counted the probes of acquires in progress: an acquire tests each slot's session-lease tags
# (the current band, the band ahead, the live ones behind) by taking each free one for a moment, at
# transaction level, under the key's mutex. A monitor that ran the documented query saw more session
# leases than the key's N, and leases held by backends that hold none (here: a key of N = 1 whose only
# slot one session holds, while other sessions' acquires are denied).
# Attack: N = 1, one session lease held; four sessions loop denied acquires (pgbench, 3 s) while a fifth
# runs the README's query in a loop and records what it sees.
# Expected: the documented query never shows more than the one lease held, nor a lease of a backend that
# holds none. Fixed in the README: the query reads pg_locks once (MATERIALIZED: one consistent picture)
# and leaves out the backends holding a key's mutex (objsubid 21071), the only ones probing; it says so.
here=$(dirname "$0")
source "$here/lib.sh"
setup_review
trap 'rm -rf "$dir"; cleanup_review' EXIT
export PGOPTIONS="-c client_min_messages=error"
dir=$(mktemp -d)
chmod 755 "$dir"
q -c "SELECT rate_limit_define('one', rate => 1, period => '1 hour', algorithm => 'concurrency')" \
  -c "CREATE TABLE seen (session_leases int, holders int)" >/dev/null || exit 2
# The README's query (since the fix), summed over this database: session leases and the backends holding
# them. (Before: the same without the CTE and the mutex filter.)
cat >"$dir/watch.sql" <<'SQL'
INSERT INTO seen SELECT coalesce(sum(n), 0), count(*) FROM (
  WITH l AS MATERIALIZED (SELECT pid, objsubid FROM pg_locks WHERE locktype = 'advisory' AND granted
                             AND database = (SELECT oid FROM pg_database WHERE datname = current_database()))
  SELECT pid, objsubid = 21070 AS session, count(*) AS n FROM l
   WHERE objsubid IN (21069, 21070)
     AND NOT EXISTS (SELECT FROM l AS m WHERE m.pid = l.pid AND m.objsubid = 21071)
   GROUP BY 1, 2) AS h WHERE session;
SQL
echo "SELECT allowed FROM rate_limit_acquire('acme', 'one');" >"$dir/deny.sql"
coproc HOLDER { psql -X -q -At -d "$REVIEW_DB" 2>&1; }
echo "SELECT allowed FROM rate_limit_acquire('acme', 'one', 'session');" >&"${HOLDER[1]}"
read -r -t 10 took <&"${HOLDER[0]}"
[ "$took" = t ] || { echo "the holder got no lease: $took"; exit 2; }
pgbench -n -c 4 -j 2 -T 3 -d "$REVIEW_DB" -f "$dir/deny.sql" >"$dir/deny.out" 2>&1 &
deniers=$!
pgbench -n -c 1 -T 3 -d "$REVIEW_DB" -f "$dir/watch.sql" >"$dir/watch.out" 2>&1
wait "$deniers"
echo '\q' >&"${HOLDER[1]}"
seen=$(q -c "SELECT count(*), max(session_leases), max(holders), count(*) FILTER (WHERE session_leases > 1) FROM seen")
IFS='|' read -r samples most holders over <<<"$seen"
echo "samples $samples; at most $most session leases seen, held by up to $holders backends ($over samples above N = 1)"
[ "$samples" -gt 100 ] || { echo "too few samples"; exit 2; }
[ "$most" = 1 ] && [ "$holders" = 1 ] && holds "the documented query counts only the one lease held"
reproduced "the README's holders query showed up to $most session leases on a key of N = 1 (1 held), in $over of $samples samples"
