#!/usr/bin/env bash
# Attacks on session leases and markers as a whole (commit 5f21b4e) that held: each check asserts the right
# behaviour, so the script fails if one regresses. Finding of the same review: f75 (README: drop + define
# "forgets the session leases held", which it does not with the same period).
here=$(dirname "$0")
source "$here/lib.sh"
setup_review rv7_other
failed=0
ok() { echo "ok: $*"; }
bad() { echo "FAILED: $*"; failed=1; }
trap cleanup_review EXIT
export PGOPTIONS="-c client_min_messages=warning"
q -c "SELECT rate_limit_define('two', rate => 2, period => '1 hour', algorithm => 'concurrency')" >/dev/null || exit 2
crashes_before=$(crash_count)
HELD="SELECT 'held', count(*) FROM pg_locks WHERE objsubid = 21070 AND pid = pg_backend_pid();"
FAIL="SELECT a.allowed, 1 / (a.remaining - a.remaining) FROM rate_limit_acquire('KEY', 'two', 'session') a;"
DEFINE="SELECT rate_limit_define('two', rate => 2, period => '1 hour', algorithm => 'concurrency');"
# Another session's session acquires of the key (3 tries): the free slots while this session keeps its own.
others_sql() { echo "SELECT 'others', count(*) FILTER (WHERE allowed) FROM (SELECT (rate_limit_acquire('$1', 'two', 'session')).allowed FROM generate_series(1, 3)) s"; }
others() { echo "\\! psql -X -q -At -c \"$(others_sql "$1")\""; }
session() { q_any -v VERBOSITY=sqlstate -v ON_ERROR_STOP=0 | tr '\n' ' '; }

# 1. pg_terminate_backend of a session holding two leases, a marker and, in its open transaction, a release
#    pending: every slot frees with the backend; no marker or entry outlives it.
(q_any -v VERBOSITY=sqlstate -v ON_ERROR_STOP=0 >/tmp/rv7_victim.$$ 2>&1 <<SQL
SET application_name = 'rv7_victim';
SELECT allowed FROM rate_limit_acquire('k1', 'two', 'session');
SELECT allowed FROM rate_limit_acquire('k1', 'two', 'session');
${FAIL//KEY/k1}
BEGIN;
SELECT rate_limit_release('k1', 'two');
SELECT rate_limit_release('k1', 'two');
SELECT pg_sleep(60);
SQL
) &
victim=$!
for _ in $(seq 1 50); do
    [ "$(q -c "SELECT count(*) FROM pg_stat_activity WHERE application_name = 'rv7_victim' AND query LIKE '%pg_sleep%'")" = 1 ] && break
    sleep 0.2
done
busy=$(q -c "$(others_sql k1x)" >/dev/null; q -c "SELECT count(*) FROM pg_locks WHERE objsubid = 21070 AND pid = (SELECT pid FROM pg_stat_activity WHERE application_name = 'rv7_victim')")
q -c "SELECT pg_terminate_backend(pid, 5000) FROM pg_stat_activity WHERE application_name = 'rv7_victim'" >/dev/null
wait "$victim"
rm -f /tmp/rv7_victim.$$
after=$(q -c "$(others_sql k1)")
[ "$busy|$after" = "2|others|2" ] && ok "terminated with 2 leases, a marker and a pending release: both slots free (N = 2 for others)" ||
    bad "terminated backend: leases before $busy, after: $after"

# 2. DROP EXTENSION and CREATE EXTENSION again in a session holding a lease: the lease (same name and
#    period) still counts, as the README says; its release after the re-creation frees it.
out=$(session <<SQL
SELECT 'A', allowed FROM rate_limit_acquire('k2', 'two', 'session');
DROP EXTENSION pg_ratelimit;
CREATE EXTENSION pg_ratelimit;
$DEFINE
$HELD
$(others k2)
SELECT 'rel', rate_limit_release('k2', 'two');
$HELD
$(others k2)
SQL
)
want="A|t  held|1 others|1 rel|t held|0 others|2 "
[ "$out" = "$want" ] && ok "DROP/CREATE EXTENSION with a lease held: still counts, released after" || bad "DROP/CREATE EXTENSION: $out"

# 3. DROP SCHEMA public CASCADE with a release pending in the open transaction (the extension goes with
#    it), the extension created again, then COMMIT: the release applies at commit; nothing internal.
out=$(session <<SQL
SELECT 'A', allowed FROM rate_limit_acquire('k3', 'two', 'session');
BEGIN;
SELECT 'rel', rate_limit_release('k3', 'two');
DROP SCHEMA public CASCADE;
CREATE SCHEMA public;
CREATE EXTENSION pg_ratelimit;
$DEFINE
COMMIT;
$HELD
$(others k3)
SQL
)
want="A|t rel|t  held|0 others|2 "
[ "$out" = "$want" ] && ok "DROP SCHEMA CASCADE + CREATE EXTENSION with a pending release: freed at commit" ||
    bad "DROP SCHEMA CASCADE with a pending release: $out"
q -c "GRANT USAGE, CREATE ON SCHEMA public TO PUBLIC" >/dev/null

# 4. rate_limit_drop + define with another period between a failure and its release: the error path's
#    release takes the marker (false); the lease stays; the next release frees it.
out=$(session <<SQL
SELECT 'A', allowed FROM rate_limit_acquire('k4', 'two', 'session');
${FAIL//KEY/k4}
SELECT rate_limit_drop('two');
SELECT rate_limit_define('two', rate => 2, period => '2 hours', algorithm => 'concurrency');
SELECT 'rel1', rate_limit_release('k4', 'two');
$HELD
SELECT 'rel2', rate_limit_release('k4', 'two');
$HELD
SELECT rate_limit_drop('two');
$DEFINE
SQL
)
want="A|t ERROR:  22012   rel1|f held|1 rel2|t held|0   "
[ "$out" = "$want" ] && ok "drop + define between a failure and its release: marker taken first, then the lease" ||
    bad "drop + define between failure and release: $out"

# 5. DISCARD ALL with a lease and a marker (a pooler's reset): the slots are free at once; the next
#    client's release frees nothing; its own acquire and release work.
out=$(session <<SQL
SELECT 'A', allowed FROM rate_limit_acquire('k5', 'two', 'session');
${FAIL//KEY/k5}
DISCARD ALL;
$HELD
$(others k5)
SELECT 'rel', rate_limit_release('k5', 'two');
SELECT 'B', allowed FROM rate_limit_acquire('k5b', 'two', 'session');
SELECT 'relB', rate_limit_release('k5b', 'two');
$HELD
SQL
)
want="A|t ERROR:  22012 held|0 others|2 rel|f B|t relB|t held|0 "
[ "$out" = "$want" ] && ok "DISCARD ALL with a lease and a marker: slots free, nothing stale" || bad "DISCARD ALL: $out"

# 6. Another role cannot make this session's lease go: its release (false), its pg_advisory_unlock_all()
#    and pg_advisory_unlock of the tag's numbers leave the slot busy.
out=$(session <<SQL
SELECT 'A', allowed FROM rate_limit_acquire('k6', 'two', 'session');
SELECT 'A2', allowed FROM rate_limit_acquire('k6', 'two', 'session');
\\! psql -X -q -At -U rv7_other -c "SELECT 'other', rate_limit_release('k6', 'two')" -c "SELECT pg_advisory_unlock_all()" -c "SELECT 'o2', count(*) FILTER (WHERE allowed) FROM (SELECT (rate_limit_acquire('k6', 'two', 'session')).allowed FROM generate_series(1, 3)) s"
$HELD
SQL
)
want="A|t A2|t other|f  o2|0 held|2 "
[ "$out" = "$want" ] && ok "another role's release and advisory unlocks free none of this session's leases" ||
    bad "another role: $out"

# 7. SET ROLE to a role without EXECUTE on rate_limit_release (the documented lockdown): 42501, and the
#    lease stays; RESET ROLE, the release works.
q -c "REVOKE EXECUTE ON FUNCTION rate_limit_release(text, text) FROM PUBLIC" >/dev/null
out=$(session <<SQL
SELECT 'A', allowed FROM rate_limit_acquire('k7', 'two', 'session');
SET ROLE rv7_other;
SELECT rate_limit_release('k7', 'two');
RESET ROLE;
$HELD
SELECT 'rel', rate_limit_release('k7', 'two');
$HELD
SQL
)
q -c "GRANT EXECUTE ON FUNCTION rate_limit_release(text, text) TO PUBLIC" >/dev/null
want="A|t ERROR:  42501 held|1 rel|t held|0 "
[ "$out" = "$want" ] && ok "SET ROLE without EXECUTE: release refused (42501), lease kept" || bad "SET ROLE: $out"

# 8. Bad arguments: NULLs, empty and unknown scope, unknown limit, a 1 MB key: SQLSTATEs, never XX000.
out=$(session <<SQL
SELECT rate_limit_acquire(NULL, 'two', 'session');
SELECT rate_limit_acquire('k8', NULL, 'session');
SELECT rate_limit_acquire('k8', 'two', NULL);
SELECT rate_limit_acquire('k8', 'two', '');
SELECT rate_limit_acquire('k8', 'two', 'Session');
SELECT rate_limit_acquire('k8', 'nosuch', 'session');
SELECT 'big', allowed FROM rate_limit_acquire(repeat('x', 1000000), 'two', 'session');
SELECT 'rbig', rate_limit_release(repeat('x', 1000000), 'two');
SELECT rate_limit_release(NULL, 'two');
SELECT rate_limit_release('k8', NULL);
SELECT 'rn', rate_limit_release('k8', 'nosuch');
$HELD
SQL
)
case "$out" in
*XX000* | *XX001* | *"server closed"*) bad "bad arguments: $out" ;;
*) [ "$(grep -o 'ERROR' <<<"$out" | wc -l)" -ge 8 ] && ok "bad arguments: SQLSTATEs only ($out)" || bad "bad arguments: $out" ;;
esac

# 9. Eight sessions at once on one key (N = 3), each a procedure committing after every step: session
#    acquires, 30% of the allowed ones failing in a PL/pgSQL block whose handler releases (the marker:
#    false), random releases of what it holds. A monitor samples the README's holders query: never more
#    than 3; at the end each session holds exactly what it believes it holds; no handler release frees one.
q >/dev/null <<'SQL' || exit 2
SELECT rate_limit_define('three', rate => 3, period => '1 hour', algorithm => 'concurrency');
CREATE PROCEDURE rv7_worker(INOUT held int, INOUT bad_releases int, INOUT real_held bigint) LANGUAGE plpgsql AS $$
DECLARE d record;
BEGIN
    held := 0; bad_releases := 0;
    FOR i IN 1..200 LOOP
        BEGIN
            SELECT * INTO d FROM rate_limit_acquire('hot', 'three', 'session');
            IF d.allowed AND random() < 0.3 THEN RAISE EXCEPTION 'boom'; END IF;
            IF d.allowed THEN held := held + 1; END IF;
        EXCEPTION WHEN raise_exception THEN
            IF rate_limit_release('hot', 'three') THEN bad_releases := bad_releases + 1; END IF;
        END;
        COMMIT;
        IF held > 0 AND random() < 0.5 THEN
            IF NOT rate_limit_release('hot', 'three') THEN bad_releases := bad_releases + 1; END IF;
            held := held - 1;
        END IF;
        COMMIT;
    END LOOP;
    SELECT count(*) INTO real_held FROM pg_locks WHERE objsubid = 21070 AND pid = pg_backend_pid() AND granted;
END $$;
SQL
HOLDERS="WITH l AS MATERIALIZED (SELECT pid, objsubid FROM pg_locks WHERE locktype = 'advisory' AND granted AND database = (SELECT oid FROM pg_database WHERE datname = current_database()))
SELECT coalesce(sum(c), 0) FROM (SELECT count(*) AS c FROM l WHERE objsubid = 21070
   AND NOT EXISTS (SELECT FROM l AS m WHERE m.pid = l.pid AND m.objsubid = 21071) GROUP BY pid) s"
workers=()
for w in $(seq 1 8); do
    q -c "CALL rv7_worker(NULL, NULL, NULL)" >"/tmp/rv7_w$w.$$" 2>&1 &
    workers+=($!)
done
max=0
while kill -0 "${workers[@]}" 2>/dev/null; do
    n=$(q -c "$HOLDERS" 2>/dev/null || echo 0)
    [ "$n" -gt "$max" ] && max=$n
done
wait
results=$(cat /tmp/rv7_w*.$$ | tr '\n' ' ')
rm -f /tmp/rv7_w*.$$
mismatch=$(tr ' ' '\n' <<<"$results" | awk -F'|' 'NF == 3 && ($1 != $3 || $2 != 0) {n++} END {print n + 0}')
lines=$(tr ' ' '\n' <<<"$results" | grep -c '|')
[ "$max" -le 3 ] && [ "$lines" = 8 ] && [ "$mismatch" = 0 ] &&
    ok "8 sessions, error paths and releases on one key: at most $max holders of 3, each holds what it believes (held|bad releases|real: $results)" ||
    bad "8 sessions: max holders $max, results (held|bad releases|real): $results"

# 10. Acquire and release from a wrapper wrongly marked PARALLEL SAFE, run in a parallel worker
#     (force_parallel_mode): refused with a SQLSTATE (a worker's session lease would end with the worker,
#     its release would look at the worker's leases); the session's lease stays.
out=$(session <<'SQL'
CREATE FUNCTION rv7_acq(k text) RETURNS boolean LANGUAGE plpgsql PARALLEL SAFE
    AS $$ BEGIN RETURN (rate_limit_acquire(k, 'two', 'session')).allowed; END $$;
CREATE FUNCTION rv7_rel(k text) RETURNS boolean LANGUAGE plpgsql PARALLEL SAFE
    AS $$ BEGIN RETURN rate_limit_release(k, 'two'); END $$;
SELECT 'A', allowed FROM rate_limit_acquire('k10', 'two', 'session');
SET force_parallel_mode = on;
SELECT rv7_acq('k10');
SELECT rv7_rel('k10');
RESET force_parallel_mode;
SELECT 'held', count(*) FROM pg_locks WHERE objsubid = 21070 AND pid = pg_backend_pid();
SQL
)
case "$out" in
"A|t ERROR:  "[0-9A-Z]????" ERROR:  "[0-9A-Z]????" held|1 ")
    if grep -q XX000 <<<"$out"; then bad "parallel worker: $out"; else ok "acquire and release in a parallel worker: refused ($out)"; fi ;;
*) bad "parallel worker: $out" ;;
esac

# 11. A session lease past its period (at most period + period/8) counts for no one, and stays in pg_locks
#     until the session's next acquire or release, as the README says; a marker of it goes with it: the
#     release after expiry frees the live lease taken since (true), not a marker; pg_advisory_unlock_all in
#     an open transaction then ROLLBACK leaves no lock and no stale lease to release.
q -c "SELECT rate_limit_define('short', rate => 1, period => '2 seconds', algorithm => 'concurrency')" >/dev/null || exit 2
out=$(session <<SQL
SELECT 'A', allowed FROM rate_limit_acquire('k11', 'short', 'session');
SELECT a.allowed, 1 / (a.remaining - a.remaining) FROM rate_limit_acquire('k11', 'short', 'session') a;
SELECT pg_sleep(2.4);
\\! psql -X -q -At -c "SELECT 'other', allowed FROM rate_limit_acquire('k11', 'short')" 2>/dev/null
$HELD
SELECT 'B', allowed FROM rate_limit_acquire('k11', 'short', 'session');
$HELD
SELECT 'rel', rate_limit_release('k11', 'short');
$HELD
SELECT 'C', allowed FROM rate_limit_acquire('k11', 'short', 'session');
BEGIN;
SELECT pg_advisory_unlock_all();
ROLLBACK;
$HELD
SELECT 'relC', rate_limit_release('k11', 'short');
\\! psql -X -q -At -c "SELECT 'other2', allowed FROM rate_limit_acquire('k11', 'short')" 2>/dev/null
SQL
)
want="A|t ERROR:  22012  other|t held|1 B|t held|1 rel|t held|0 C|t  held|0 relC|f other2|t "
[ "$out" = "$want" ] && ok "expired lease: counts for no one, given back at the next acquire; unlock_all + rollback: nothing stale" ||
    bad "expiry / unlock_all: $out"

# 12. A session that took a transaction lease and a session lease in a transaction it PREPAREd, then is
#     terminated: its session lease goes with it, the prepared transaction's lease stays until COMMIT
#     PREPARED (others: 1 of 2, then 2).
out=$(session <<SQL
BEGIN;
SELECT 'T', allowed FROM rate_limit_acquire('k12', 'two');
SELECT 'S', allowed FROM rate_limit_acquire('k12', 'two', 'session');
PREPARE TRANSACTION 'rv7_k12';
SELECT pg_terminate_backend(pg_backend_pid());
SQL
)
sleep 0.5
after=$(q -c "$(others_sql k12)")
q -c "COMMIT PREPARED 'rv7_k12'" >/dev/null
final=$(q -c "$(others_sql k12)")
case "$out" in "T|t S|t "*) ;; *) after="bad: $out $after" ;; esac
[ "$after|$final" = "others|1|others|2" ] && ok "terminated after PREPARE: session lease gone, the prepared lease held until COMMIT PREPARED" ||
    bad "terminated after PREPARE: $after | $final"

[ "$(crash_count)" = "$crashes_before" ] && ok "no crash in the server log" || bad "the server crashed"
[ $failed -eq 0 ] && holds "12 lease attacks held (2PC + terminate, expiry and pg_advisory_unlock_all, parallel worker, 8 sessions with error paths, terminate, DROP/CREATE EXTENSION, DROP SCHEMA, drop + define, DISCARD ALL, other role, SET ROLE, bad arguments)"
reproduced "a lease attack no longer holds"
