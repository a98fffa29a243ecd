#!/usr/bin/env bash
# Attacks on markers taken at commit and pruned when they protect no lease (commit 28e84b7) that held:
# each check asserts the right behaviour, so the script fails if one regresses. Findings of the same
# review: f73 (an acquire drops the marker a pending release took), f74 (a marker made beside a lease
# whose release is pending is pruned; the release's rollback leaves none).
here=$(dirname "$0")
source "$here/lib.sh"
setup_review
failed=0
ok() { echo "ok: $*"; }
bad() { echo "FAILED: $*"; failed=1; }
trap cleanup_review EXIT
export PGOPTIONS="-c client_min_messages=warning"
q -c "SELECT rate_limit_define('two', rate => 2, period => '1 hour', algorithm => 'concurrency')" >/dev/null || exit 2
log_lines_before=0
[ -n "${SERVER_LOG:-}" ] && [ -r "$SERVER_LOG" ] && log_lines_before=$(wc -l <"$SERVER_LOG")
HELD="SELECT 'held', count(*) FROM pg_locks WHERE objsubid = 21070 AND pid = pg_backend_pid();"
FAIL="SELECT a.allowed, 1 / (a.remaining - a.remaining) FROM rate_limit_acquire('KEY', 'two', 'session') a;"
# Another session's session acquires of the key (3 tries): the free slots while this session keeps its own.
others() { echo "\\! psql -X -q -At -c \"SELECT 'others', count(*) FILTER (WHERE allowed) FROM (SELECT (rate_limit_acquire('$1', 'two', 'session')).allowed FROM generate_series(1, 3)) s\""; }
# One session runs the SQL given on stdin; every line joined by spaces (errors as SQLSTATEs).
session() { q_any -v VERBOSITY=sqlstate -v ON_ERROR_STOP=0 | tr '\n' ' '; }

# 1. f74's sequence committed: release A, B's acquire in a savepoint rolled back, COMMIT: A's slot frees
#    at commit, B's error path frees nothing, and other sessions get exactly N = 2.
out=$(session <<SQL
SELECT 'A', allowed FROM rate_limit_acquire('k1', 'two', 'session');
BEGIN;
SELECT 'relA', rate_limit_release('k1', 'two');
SAVEPOINT s;
SELECT 'B', allowed FROM rate_limit_acquire('k1', 'two', 'session');
ROLLBACK TO s;
COMMIT;
SELECT 'relB', rate_limit_release('k1', 'two');
$HELD
$(others k1)
SQL
)
[ "$out" = "A|t relA|t B|t relB|f held|0 others|2 " ] &&
    ok "release + rolled-back acquire, committed: A freed at commit, B's release frees nothing, N = 2 for others" ||
    bad "release + rolled-back acquire, committed: $out"

# 2. A release takes a marker, then an allowed acquire (job C) in the same transaction, COMMIT: the marker
#    goes at commit, C's lease stays; C's release frees it; A's lease stays; others get what is left.
out=$(session <<SQL
SELECT 'A', allowed FROM rate_limit_acquire('k2', 'two', 'session');
${FAIL//KEY/k2}
BEGIN;
SELECT 'relB', rate_limit_release('k2', 'two');
SELECT 'C', allowed FROM rate_limit_acquire('k2', 'two', 'session');
COMMIT;
$HELD
SELECT 'relC', rate_limit_release('k2', 'two');
$HELD
$(others k2)
SQL
)
[ "$out" = "A|t ERROR:  22012 relB|f C|t held|2 relC|t held|1 others|1 " ] &&
    ok "marker taken + acquire committed: the marker goes at commit, each later release frees one lease" ||
    bad "marker taken + acquire committed: $out"

# 3. A marker and its lease both released in one transaction: COMMIT frees the lease, the marker goes;
#    a third release frees nothing; others get N = 2.
out=$(session <<SQL
SELECT 'A', allowed FROM rate_limit_acquire('k3', 'two', 'session');
${FAIL//KEY/k3}
BEGIN;
SELECT 'rel1', rate_limit_release('k3', 'two');
SELECT 'rel2', rate_limit_release('k3', 'two');
$HELD
COMMIT;
SELECT 'rel3', rate_limit_release('k3', 'two');
$HELD
$(others k3)
SQL
)
[ "$out" = "A|t ERROR:  22012 rel1|f rel2|t held|1 rel3|f held|0 others|2 " ] &&
    ok "marker + lease released in one transaction: one lease freed at commit, nothing more, N = 2 for others" ||
    bad "marker + lease released together: $out"

# 4. A lease taken in the open transaction (not yet committed), then B's acquire in a savepoint rolled
#    back: the marker is kept beside the uncommitted lease; B's release takes it; COMMIT keeps A.
out=$(session <<SQL
BEGIN;
SELECT 'A', allowed FROM rate_limit_acquire('k4', 'two', 'session');
SAVEPOINT s;
SELECT 'B', allowed FROM rate_limit_acquire('k4', 'two', 'session');
ROLLBACK TO s;
SELECT 'relB', rate_limit_release('k4', 'two');
COMMIT;
$HELD
$(others k4)
SQL
)
[ "$out" = "A|t B|t relB|f held|1 others|1 " ] &&
    ok "marker beside a lease of the open transaction: kept, taken by B's release, A stays" ||
    bad "marker beside an uncommitted lease: $out"

# 5. A release takes a marker in a subtransaction that commits (RELEASE SAVEPOINT), the parent rolls back:
#    the marker comes back; the retried release takes it; A stays.
out=$(session <<SQL
SELECT 'A', allowed FROM rate_limit_acquire('k5', 'two', 'session');
${FAIL//KEY/k5}
BEGIN;
SAVEPOINT s;
SELECT 'rel', rate_limit_release('k5', 'two');
RELEASE SAVEPOINT s;
ROLLBACK;
SELECT 'again', rate_limit_release('k5', 'two');
$HELD
$(others k5)
SQL
)
[ "$out" = "A|t ERROR:  22012 rel|f again|f held|1 others|1 " ] &&
    ok "marker taken in a committed subtransaction, parent rolled back: given back, A stays" ||
    bad "marker taken in a committed subtransaction: $out"

# 6. Markers of keys the session holds no lease of go at once, those beside a lease stay: 1,200 failures on
#    other keys in one session, then the release for key k6 (held + marker) takes the marker.
out=$(session <<SQL
SELECT 'A', allowed FROM rate_limit_acquire('k6', 'two', 'session');
${FAIL//KEY/k6}
DO \$\$ BEGIN FOR i IN 1..1200 LOOP BEGIN PERFORM 1 / (a.remaining - a.remaining) FROM rate_limit_acquire('x' || i, 'two', 'session') a; EXCEPTION WHEN division_by_zero THEN NULL; END; END LOOP; END \$\$;
SELECT 'rel', rate_limit_release('k6', 'two');
$HELD
$(others k6)
SQL
)
[ "$out" = "A|t ERROR:  22012 rel|f held|1 others|1 " ] &&
    ok "1,200 failures on other keys: the marker beside the held lease stays, its release frees nothing" ||
    bad "marker beside a held lease after 1,200 failures: $out"

# 7. f73's and f74's sequences (whose releases are findings) and a burst of them with 2PC and savepoints,
#    for the server log only: no lock given back twice, no internal error (XX000) in any output.
out=$(session <<SQL
SELECT 'A', allowed FROM rate_limit_acquire('k7', 'two', 'session');
${FAIL//KEY/k7}
BEGIN;
SELECT 'first', rate_limit_release('k7', 'two');
SELECT 'next', allowed FROM rate_limit_acquire('k7', 'two', 'session');
ROLLBACK;
SELECT 'again', rate_limit_release('k7', 'two');
SELECT 'again', rate_limit_release('k7', 'two');
SELECT 'A', allowed FROM rate_limit_acquire('k7', 'two', 'session');
BEGIN;
SELECT 'relA', rate_limit_release('k7', 'two');
SAVEPOINT s;
SELECT 'B', allowed FROM rate_limit_acquire('k7', 'two', 'session');
ROLLBACK TO s;
SELECT 'relB', rate_limit_release('k7', 'two');
PREPARE TRANSACTION 'leases6_2pc';
ROLLBACK PREPARED 'leases6_2pc';
SELECT 'rel', rate_limit_release('k7', 'two');
$HELD
SQL
)
grep -q "XX000" <<<"$out" && bad "f73/f74 sequences: internal error: $out" || ok "f73/f74 sequences with 2PC: no internal error ($out)"

# 8. No WARNING (a lock released twice, "you don't own a lock") nor crash in the server log from these.
if [ -n "${SERVER_LOG:-}" ] && [ -r "$SERVER_LOG" ]; then
    warnings=$(tail -n +"$((log_lines_before + 1))" "$SERVER_LOG" | grep -c -E "you don't own a lock|terminated by signal|WARNING:.*lock")
    [ "$warnings" = 0 ] && ok "no lock WARNING nor crash in the server log" || bad "server log: $warnings lock WARNING(s) or crash(es)"
else
    bad "SERVER_LOG not set: cannot check the server log for WARNINGs"
fi

[ $failed -eq 0 ] && holds "8 checks: markers taken at commit and pruned only beside no lease" 
reproduced "an attack on markers no longer holds"
