#!/usr/bin/env bash
# Attacks on the session-lease markers and the release order (commits ad1ab4d, 4143717, fa8f68a) that held
# during the fifteenth review. Each check prints "ok: ..." or "FAILED: ..."; the script fails if any stops
# holding. (The attacks that did not hold: f66-f70.)
here=$(dirname "$0")
source "$here/lib.sh"
setup_review
export PGOPTIONS="-c client_min_messages=error"  # autocommit probes warn that their lease ends at once
failed=0
ok() { echo "ok: $*"; }
bad() { echo "FAILED: $*"; failed=1; }
finish() { q -c "ROLLBACK PREPARED 'leases4_2pc'" >/dev/null 2>&1; cleanup_review; }
trap finish EXIT
q -c "SELECT rate_limit_define('one', rate => 1, period => '1 hour', algorithm => 'concurrency')" \
  -c "SELECT rate_limit_define('two', rate => 2, period => '1 hour', algorithm => 'concurrency')" \
  -c "SELECT rate_limit_define('three', rate => 3, period => '1 hour', algorithm => 'concurrency')" \
  -c "SELECT rate_limit_define('big', rate => 10000, period => '1 hour', algorithm => 'concurrency')" >/dev/null || exit 2
HELD="SELECT 'held', count(*) FROM pg_locks WHERE objsubid = 21070 AND pid = pg_backend_pid();"
# One session runs the SQL given on stdin; every line joined by spaces (errors as SQLSTATEs).
session() { q_any -v VERBOSITY=sqlstate | tr '\n' ' '; }

# 1. A marker with a pending lease of the key: the open transaction's lease, then a savepoint's lease
#    rolled back; the first release takes the marker (false), the second releases the open one (true),
#    which goes at COMMIT (f66: a release takes effect at commit); the committed lease stays.
out=$(session <<SQL
SELECT 'A', allowed FROM rate_limit_acquire('r', 'three', 'session');
BEGIN; SELECT 'B', allowed FROM rate_limit_acquire('r', 'three', 'session');
SAVEPOINT s; SELECT 'C', allowed FROM rate_limit_acquire('r', 'three', 'session'); ROLLBACK TO s;
SELECT 'rel1', rate_limit_release('r', 'three'); $HELD
SELECT 'rel2', rate_limit_release('r', 'three'); $HELD
COMMIT; $HELD
SQL
)
[ "$out" = "A|t B|t C|t rel1|f held|2 rel2|t held|2 held|1 " ] &&
    ok "marker + pending lease: the marker goes first (false), then the open transaction's lease (at COMMIT)" || bad "marker + pending lease: $out"

# 2. statement_timeout during the probes of N = 10,000 inside a transaction block: the release right
#    after the ROLLBACK takes the marker; the session's earlier lease stays.
out=$(session <<SQL
SELECT 'A', allowed FROM rate_limit_acquire('t', 'big', 'session');
BEGIN; SET LOCAL statement_timeout = '5ms'; SELECT 'B', allowed FROM rate_limit_acquire('t', 'big', 'session'); ROLLBACK;
SELECT 'rel', rate_limit_release('t', 'big');
$HELD
SQL
)
[ "$out" = "A|t ERROR:  57014 rel|f held|1 " ] &&
    ok "timeout mid-search: the next release takes the marker, the earlier lease stays" || bad "timeout mid-search: $out"

# 3. Markers and 2PC: a savepoint's lease rolled back, then PREPARE TRANSACTION; the release takes the
#    marker (false, the committed lease stays); after COMMIT PREPARED a release frees the lease.
out=$(session <<SQL
SELECT 'A', allowed FROM rate_limit_acquire('q', 'two', 'session');
BEGIN; SAVEPOINT s; SELECT 'B', allowed FROM rate_limit_acquire('q', 'two', 'session'); ROLLBACK TO s; PREPARE TRANSACTION 'leases4_2pc';
SELECT 'rel', rate_limit_release('q', 'two');
$HELD
COMMIT PREPARED 'leases4_2pc';
SELECT 'rel', rate_limit_release('q', 'two');
$HELD
SQL
)
[ "$out" = "A|t B|t rel|f held|1 rel|t held|0 " ] &&
    ok "2PC: a marker survives PREPARE; the release takes it, then the lease" || bad "2PC: $out"

# 4. A pooler's DISCARD ALL after a failure: the next client's acquire + release pair up.
out=$(session <<SQL
SELECT 'A', a.allowed, 1 / (a.remaining - a.remaining) FROM rate_limit_acquire('d', 'two', 'session') a;
DISCARD ALL;
SELECT 'B', allowed FROM rate_limit_acquire('d', 'two', 'session');
SELECT 'rel', rate_limit_release('d', 'two');
$HELD
SQL
)
[ "$out" = "ERROR:  22012 B|t rel|t held|0 " ] && ok "DISCARD ALL after a failure: the next client's release frees its lease" ||
    bad "DISCARD ALL: $out"

# 5. run_transaction retrying an acquire (40001 after it): the retry's lease is held once, its release frees it.
out=$(session <<SQL
BEGIN ISOLATION LEVEL SERIALIZABLE; SELECT 'A', allowed FROM rate_limit_acquire('ra', 'one', 'session');
DO \$\$ BEGIN RAISE EXCEPTION 'x' USING ERRCODE = 'serialization_failure'; END \$\$; ROLLBACK;
BEGIN ISOLATION LEVEL SERIALIZABLE; SELECT 'A2', allowed FROM rate_limit_acquire('ra', 'one', 'session'); COMMIT;
$HELD
SELECT 'rel', rate_limit_release('ra', 'one'); $HELD
SQL
)
[ "$out" = "A|t ERROR:  40001 A2|t held|1 rel|t held|0 " ] &&
    ok "retried acquire (40001): one lease held, released by one release" || bad "retried acquire: $out"

# 6. Many keys: a marker of one key never takes the release of another (both released by the statement
#    after the failure); a loop of 50 failures on one key,
#    each handler releasing, leaves the session's committed lease of that key and frees nothing else.
out=$(session <<SQL
SELECT 'k1', allowed FROM rate_limit_acquire('k1', 'two', 'session');
SELECT 'k2', allowed FROM rate_limit_acquire('k2', 'two', 'session');
SELECT a.allowed, 1 / (a.remaining - a.remaining) FROM rate_limit_acquire('k1', 'two', 'session') a;
SELECT 'rel k2, k1', rate_limit_release('k2', 'two'), rate_limit_release('k1', 'two');
$HELD
DO \$\$ DECLARE freed int := 0; BEGIN
  FOR i IN 1..50 LOOP
    BEGIN
      PERFORM rate_limit_acquire('k1', 'two', 'session'); RAISE division_by_zero;
    EXCEPTION WHEN division_by_zero THEN
      IF rate_limit_release('k1', 'two') THEN freed := freed + 1; END IF;
    END;
  END LOOP;
  IF freed <> 0 THEN RAISE EXCEPTION 'freed %', freed; END IF;
END \$\$;
$HELD
SQL
)
[ "$out" = "k1|t k2|t ERROR:  22012 rel k2, k1|t|f held|1 held|1 " ] &&
    ok "markers per key; 50 failures on one key with releasing handlers free nothing held" || bad "many keys / loop: $out"

# 7. Two markers of one key (two leases of one statement rolled back): two releases (in the statement
#    after the failure) take them, the next one frees the committed lease.
out=$(session <<SQL
SELECT 'A', allowed FROM rate_limit_acquire('m', 'three', 'session');
SELECT 1 / (count(*) - 2) FROM (SELECT rate_limit_acquire('m', 'three', 'session') FROM generate_series(1, 2)) s;
SELECT 'rel', rate_limit_release('m', 'three'), rate_limit_release('m', 'three');
$HELD
SELECT 'rel', rate_limit_release('m', 'three'); $HELD
SQL
)
[ "$out" = "A|t ERROR:  22012 rel|f|f held|1 rel|t held|0 " ] &&
    ok "two markers of one key: two releases take them, the third frees the lease" || bad "two markers: $out"

# 8. A marker lasts until a release takes it, whatever statements run in between (f70), and no longer:
#    the release after it frees the lease (a marker never strands a lease: it also goes at the key's next
#    session acquire and after the period).
out=$(session <<SQL
SELECT 'A', allowed FROM rate_limit_acquire('w', 'two', 'session');
SELECT a.allowed, 1 / (a.remaining - a.remaining) FROM rate_limit_acquire('w', 'two', 'session') a;
SELECT 1; SELECT 2;
SELECT 'rel', rate_limit_release('w', 'two'); $HELD
SELECT 'rel', rate_limit_release('w', 'two'); $HELD
SQL
)
[ "$out" = "A|t ERROR:  22012 1 2 rel|f held|1 rel|t held|0 " ] && ok "a marker lasts until a release takes it, then the lease goes" || bad "marker window: $out"

# 9. A hostile role's failures leave markers only in its own session: another role's release is unaffected.
q -c "CREATE ROLE leases4_eve LOGIN" >/dev/null 2>&1; REVIEW_ROLES+=(leases4_eve)
q -c "GRANT USAGE ON SCHEMA public TO leases4_eve" >/dev/null
out=$( (echo "SELECT 'A', allowed FROM rate_limit_acquire('shared', 'two', 'session');"
        echo "\\! psql -X -q -At -U leases4_eve -v VERBOSITY=sqlstate -c \"SELECT a.allowed, 1 / (a.remaining - a.remaining) FROM rate_limit_acquire('shared', 'two', 'session') a\" -c \"SELECT 'eve rel', rate_limit_release('shared', 'two')\" 2>&1"
        echo "SELECT 'rel', rate_limit_release('shared', 'two');"; echo "$HELD") | session)
[ "$out" = "A|t ERROR:  22012 eve rel|f rel|t held|0 " ] && ok "another role's markers stay in its session" || bad "other role: $out"

[ -n "${SERVER_LOG:-}" ] && [ -r "$SERVER_LOG" ] && [ "$(crash_count)" -ne 0 ] && bad "server crashes in the log"
[ $failed -eq 0 ] && holds "markers and release order: 9 checks"
reproduced "an attack on markers and the release order stopped holding"
