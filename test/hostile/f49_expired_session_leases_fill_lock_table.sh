#!/usr/bin/env bash
# Finding 49 (medium): an expired session lease stops counting but is never given back: its lock stays in
# the shared lock table until rate_limit_release or the session's end. A long-lived (pooled) connection that
# takes session leases and relies on the documented expiry ("an idle pooled session cannot hold a slot for
# ever") instead of releasing each one accumulates one lock per acquire, even on a limit of N = 1, until the
# server's lock table is full: then every new connection fails (FATAL: out of shared memory, 53200) and
# every other session's DDL and non-fast-path locks too, until that one session ends. The README's "why it
# never leaks" and its pg_locks query ("Who holds leases") count these dead leases as held, too.
# Attack: N = 1, period 1 s; one session acquires a session lease every 2 s of (fake) clock and never
# releases: each call is allowed (the previous lease expired), each leaves one more lock.
# Expected: a key's expired leases do not pile up (given back when found expired, e.g. by the next acquire
# of the holder), so new connections keep working. Starts a cluster of its own (own_cluster.sh): the
# default max_locks_per_transaction (64) and max_connections (100).
here=$(dirname "$0")
source "$here/lib.sh"
source "$here/own_cluster.sh"
own_cluster_start
export PGDATABASE=postgres
p() { psql -X -q -At -v ON_ERROR_STOP=1 "$@"; }
p -c "CREATE EXTENSION pg_ratelimit" -c "SELECT rate_limit_define('poll', rate => 1, period => '1 second', algorithm => 'concurrency')" \
    >/dev/null || exit 2
# The pooled connection: acquires, never releases, for up to 20,000 jobs; then, still connected, lets
# another client try to connect.
out=$(p 2>&1 <<'SQL'
DO $$
DECLARE i int := 0; d record;
BEGIN
  WHILE i < 20000 LOOP
    PERFORM set_config('pg_ratelimit.fake_now', (timestamptz '2026-01-01 00:00:00+00' + i * interval '2 seconds')::text, false);
    BEGIN
      SELECT * INTO d FROM rate_limit_acquire('acme', 'poll', 'session');
    EXCEPTION WHEN others THEN RAISE NOTICE 'error after % acquires: %', i, SQLSTATE; EXIT;
    END;
    IF NOT d.allowed THEN RAISE NOTICE 'denied after % acquires', i; EXIT; END IF;
    i := i + 1;
  END LOOP;
  RAISE NOTICE 'acquires allowed: %', i;
END $$;
SELECT 'held', count(*) FROM pg_locks WHERE locktype = 'advisory' AND objsubid = 21070 AND pid = pg_backend_pid();
\! psql -X -q -At -c "SELECT 'other client connected'" 2>&1
SQL
)
echo "$out"
held=$(grep '^held|' <<<"$out" | cut -d'|' -f2)
[ -n "$held" ] || { echo "no count"; exit 2; }
if grep -q 'other client connected' <<<"$out" && [ "$held" -le 1 ]; then
    holds "expired session leases are given back: $held lock(s) held, new connections work"
fi
grep -q 'other client connected' <<<"$out" ||
    reproduced "one session's $held expired session leases of an N = 1 limit filled the lock table: new connections fail (out of shared memory)"
reproduced "one session holds $held locks for expired session leases of an N = 1 limit"
