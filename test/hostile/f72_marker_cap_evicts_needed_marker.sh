#!/usr/bin/env bash
# Finding 72 (low): the cap of 1,000 markers evicts the oldest marker whatever it stands for, even the one
# marker that protects a lease the session still holds, while it keeps markers that protect nothing (keys
# of which the session holds no lease: a release there frees nothing anyway, and the key's next acquire
# drops them). A worker holding a long session lease on one key whose acquire of a second lease of that key
# fails, then running a batch in which 1,000 per-item session acquires fail (each in its own savepoint or
# EXCEPTION block), loses the first key's marker: its error path's release frees the lease it still holds
# (true): N + 1 admitted. The README's "so the usual cleanup, a release in an EXCEPTION handler or a
# client's catch, frees nothing else" is false there ("at most 1,000 (the oldest go first)" does not say
# that a marker still needed goes).
# Attack: N = 2. The session holds job A's lease on 'acme'. Job B's acquire on 'acme' fails (a marker).
# Then 1,000 acquires on other keys fail in one DO block (1,000 markers of keys without a lease). Then the
# error path of job B releases 'acme'.
# Expected: the release takes B's marker (false); job A's lease stays (1 held).
# Suggested fix: trim_markers drops first the markers of keys of which the session holds no live lease
# (they protect nothing); only markers that each stand beside a held lease count against the cap (at most
# one per held lease is ever useful), or say in the README that a failure on 1,000 other keys makes the
# error path's release free a held lease.
# Fixed: markers of keys the session holds no lease of go at once (they protect nothing), and beyond the
# cap only the oldest of the rest go: 1,000 failures on other keys leave the needed marker alone.
here=$(dirname "$0")
source "$here/lib.sh"
setup_review
trap cleanup_review EXIT
export PGOPTIONS="-c client_min_messages=error"
q -c "SELECT rate_limit_define('jobs', rate => 2, period => '1 hour', algorithm => 'concurrency')" >/dev/null || exit 2
out=$(q_any -v VERBOSITY=sqlstate <<'SQL' | tr '\n' ' '
SELECT 'A', allowed FROM rate_limit_acquire('acme', 'jobs', 'session');
SELECT a.allowed, 1 / (a.remaining - a.remaining) FROM rate_limit_acquire('acme', 'jobs', 'session') a;
DO $$
BEGIN
  FOR i IN 1 .. 1000 LOOP
    BEGIN
      PERFORM rate_limit_acquire('item' || i, 'jobs', 'session');
      RAISE EXCEPTION 'item % failed', i;
    EXCEPTION WHEN raise_exception THEN NULL;
    END;
  END LOOP;
END $$;
SELECT 'released', rate_limit_release('acme', 'jobs');
SELECT 'held', count(*) FROM pg_locks WHERE objsubid = 21070 AND pid = pg_backend_pid();
SQL
)
[[ "$out" == "A|t ERROR:  22012 released|f held|1 " ]] &&
    holds "1,000 markers of other keys leave the marker beside a held lease: the error path's release frees nothing"
echo "$out"
reproduced "1,000 failures on other keys evicted the marker beside job A's lease: the error path's release freed it"
