#!/usr/bin/env bash
# Attacks on the f62 fix (commit ad1ab4d: a session lease taken by a (sub)transaction that rolls back is
# released, by transaction callbacks) that held during the fourteenth review. Each check prints "ok: ..."
# or "FAILED: ..."; the script fails if any stops holding. (The attacks that did not hold: f63-f65.)
# Check 15 runs on a cluster of its own (own_cluster.sh), without shared_preload_libraries.
here=$(dirname "$0")
source "$here/lib.sh"
setup_review
export PGOPTIONS="-c client_min_messages=error"  # autocommit probes warn that their lease ends at once
failed=0
ok() { echo "ok: $*"; }
bad() { echo "FAILED: $*"; failed=1; }
log_lines_before=0
[ -n "${SERVER_LOG:-}" ] && [ -r "$SERVER_LOG" ] && log_lines_before=$(wc -l <"$SERVER_LOG")
q -c "SELECT rate_limit_define('jobs', rate => 5, period => '1 hour', algorithm => 'concurrency')" \
  -c "SELECT rate_limit_define('one', rate => 1, period => '1 hour', algorithm => 'concurrency')" >/dev/null || exit 2
HELD="SELECT 'held', count(*) FROM pg_locks WHERE objsubid = 21070 AND pid = pg_backend_pid();"
ACQ="rate_limit_acquire('acme', 'jobs', 'session')"
# The same call, evaluated once per row g of the query (an argument depending on g, always 'acme').
ACQ_G="rate_limit_acquire(left('acme' || g, 4), 'jobs', 'session')"
# One session runs the SQL given on stdin, then counts its session leases: prints every line joined by
# spaces (errors as SQLSTATEs).
session() { (cat; echo "$HELD") | q_any -v VERBOSITY=sqlstate | tr '\n' ' '; }
# Session leases of the review database held by anyone.
all_held() { q -c "SELECT count(*) FROM pg_locks WHERE objsubid = 21070 AND database = (SELECT oid FROM pg_database WHERE datname = current_database())"; }

# 1. Nested savepoints, several levels: a lease at each of levels 1-4; RELEASE of the deepest, then
#    ROLLBACK TO the level-3 savepoint (levels 3 and 4 go), then RELEASE of level 2 and COMMIT: 2 kept. Then
#    ROLLBACK TO an outer savepoint from three levels down: only the leases above it go.
out=$(session <<SQL
BEGIN;
SELECT 'l1', allowed FROM $ACQ;
SAVEPOINT a; SELECT 'l2', allowed FROM $ACQ;
SAVEPOINT b; SELECT 'l3', allowed FROM $ACQ;
SAVEPOINT c; SELECT 'l4', allowed FROM $ACQ;
RELEASE c;
ROLLBACK TO b;
RELEASE a;
COMMIT;
$HELD
BEGIN;
SAVEPOINT x; SELECT 'm1', allowed FROM $ACQ;
SAVEPOINT y; SELECT 'm2', allowed FROM $ACQ;
SAVEPOINT z; SELECT 'm3', allowed FROM $ACQ;
ROLLBACK TO x;
SELECT 'm4', allowed FROM $ACQ;
COMMIT;
SQL
)
[ "$out" = "l1|t l2|t l3|t l4|t held|2 m1|t m2|t m3|t m4|t held|3 " ] &&
    ok "nested savepoints: RELEASE then ROLLBACK TO an outer one gives back exactly the leases above it" ||
    bad "nested savepoints: $out"

# 2. PL/pgSQL exception blocks three deep: the innermost raises, the middle catches (its own lease and
#    the inner's go, the outer's stays); a block that catches nothing and succeeds keeps its lease; a
#    block whose handler itself raises, caught one level up.
out=$(session <<SQL
DO \$\$
BEGIN
  PERFORM $ACQ;                         -- kept
  BEGIN
    PERFORM $ACQ;                       -- goes
    BEGIN
      PERFORM $ACQ;                     -- goes
      RAISE division_by_zero;
    END;
  EXCEPTION WHEN division_by_zero THEN NULL;
  END;
  BEGIN
    PERFORM $ACQ;                       -- kept: the block succeeds
  EXCEPTION WHEN others THEN NULL;
  END;
  BEGIN
    BEGIN
      PERFORM $ACQ;                     -- goes
      RAISE unique_violation;
    EXCEPTION WHEN unique_violation THEN
      PERFORM $ACQ;                     -- goes: taken by the handler, in the block that then fails
      RAISE division_by_zero;
    END;
  EXCEPTION WHEN division_by_zero THEN NULL;
  END;
END
\$\$;
SQL
)
[ "$out" = "held|2 " ] && ok "PL/pgSQL blocks three deep and a raising handler: 2 of 6 kept, as the blocks that succeeded" ||
    bad "PL/pgSQL blocks: $out"

# 3. Set-returning calls failing midway: LATERAL over generate_series with a division by zero at the third
#    row; a cursor fetched in part and then the transaction failing; a cursor fetched inside a savepoint
#    rolled back (those rows' leases go, the cursor goes on); a WITH HOLD cursor materialized at COMMIT.
out=$(session <<SQL
SELECT count(*) FROM generate_series(1, 3) g, LATERAL $ACQ_G a WHERE 1 / (3 - g) >= 0;
$HELD
BEGIN;
DECLARE c CURSOR FOR SELECT a.allowed FROM generate_series(1, 4) g, LATERAL $ACQ_G a;
FETCH 2 FROM c;
SELECT 1 / 0;
ROLLBACK;
$HELD
BEGIN;
DECLARE d CURSOR FOR SELECT a.allowed FROM generate_series(1, 4) g, LATERAL $ACQ_G a;
FETCH 1 FROM d;
SAVEPOINT s;
FETCH 2 FROM d;
ROLLBACK TO s;
FETCH 1 FROM d;
COMMIT;
$HELD
BEGIN;
DECLARE h CURSOR WITH HOLD FOR SELECT a.allowed FROM generate_series(1, 2) g, LATERAL $ACQ_G a;
COMMIT;
FETCH ALL FROM h;
CLOSE h;
SQL
)
[ "$out" = "ERROR:  22012 held|0 t t ERROR:  22012 held|0 t t t t held|2 t t held|4 " ] &&
    ok "LATERAL failing at row 3: none kept; cursors: the failed fetches' leases go, committed ones and a WITH HOLD cursor's stay" ||
    bad "set-returning calls and cursors: $out"

# 4. A WITH HOLD cursor whose materialization at COMMIT fails midway: COMMIT fails, nothing kept.
out=$(session <<SQL
BEGIN;
DECLARE h CURSOR WITH HOLD FOR SELECT a.allowed, 1 / (2 - g) FROM generate_series(1, 3) g, LATERAL $ACQ_G a;
COMMIT;
SQL
)
[ "$out" = "ERROR:  22012 held|0 " ] && ok "a WITH HOLD cursor failing at COMMIT: nothing kept" || bad "WITH HOLD failing: $out"

# 5. 2PC: a session lease taken by a prepared transaction stays with the session (documented) after COMMIT
#    PREPARED and after ROLLBACK PREPARED; a PREPARE that fails (a temporary table) gives it back.
out=$(session <<SQL
BEGIN; SELECT 'p1', allowed FROM $ACQ; PREPARE TRANSACTION 'rvf62_p1';
COMMIT PREPARED 'rvf62_p1';
$HELD
BEGIN; SELECT 'p2', allowed FROM $ACQ; PREPARE TRANSACTION 'rvf62_p2';
ROLLBACK PREPARED 'rvf62_p2';
$HELD
CREATE TEMP TABLE t (i int);
BEGIN; INSERT INTO t VALUES (1); SELECT 'p3', allowed FROM $ACQ; PREPARE TRANSACTION 'rvf62_p3';
SQL
)
[ "$out" = "p1|t held|1 p2|t held|2 p3|t ERROR:  0A000 held|2 " ] &&
    ok "2PC: kept through COMMIT PREPARED and ROLLBACK PREPARED (as documented); a failed PREPARE gives it back" ||
    bad "2PC: $out"

# 6. rate_limit_release takes effect at commit (since f66): inside a transaction (and a savepoint) that
#    then rolls back, the slot stays held for another session, and after the rollback the lease is still
#    held and releasable; no double release.
out=$(q_any -v VERBOSITY=sqlstate <<SQL | tr '\n' ' '
SELECT 'took', allowed FROM rate_limit_acquire('k6', 'one', 'session');
BEGIN;
SAVEPOINT s;
SELECT 'released', rate_limit_release('k6', 'one');
\\! psql -X -q -At -c "SELECT 'other', allowed FROM rate_limit_acquire('k6', 'one')"
ROLLBACK TO s;
ROLLBACK;
$HELD
SELECT 'again', rate_limit_release('k6', 'one');
SQL
)
[ "$out" = "took|t released|t other|f held|1 again|t " ] &&
    ok "release inside a rolled-back savepoint and transaction: undone, the lease still held" || bad "release then rollback: $out"

# 7. pg_advisory_unlock_all() in the transaction that took the lease, another session taking the freed
#    slot, then the rollback: no WARNING, the other session's lease untouched; DISCARD ALL then a failed
#    acquire transaction: nothing held, no WARNING.
other_out=$(mktemp)
out=$(PGOPTIONS="-c client_min_messages=warning" q_any -v VERBOSITY=sqlstate <<SQL | tr '\n' ' '
BEGIN;
SELECT 'a', allowed FROM rate_limit_acquire('k7', 'one', 'session');
SELECT 'unlock' FROM (SELECT pg_advisory_unlock_all()) AS u;
\\! psql -X -q -At -c "SELECT 'b', allowed FROM rate_limit_acquire('k7', 'one', 'session')" -c "SELECT pg_sleep(2)" -c "$HELD" >$other_out 2>&1 &
\\! sleep 0.7
ROLLBACK;
$HELD
DISCARD ALL;
BEGIN; SELECT 'c', allowed FROM rate_limit_acquire('k7', 'one', 'session'); ROLLBACK;
SELECT 'd', allowed FROM rate_limit_acquire('k7', 'one', 'session');
SELECT 'release', rate_limit_release('k7', 'one');
SQL
)
sleep 2
other=$(tr '\n' ' ' <"$other_out")
rm -f "$other_out"
[ "$out" = "a|t unlock held|0 c|f d|f release|f " ] && [ "$other" = "b|t  held|1 " ] &&
    ok "pg_advisory_unlock_all then rollback, DISCARD ALL: no WARNING, the other session's lease untouched" ||
    bad "unlock_all then rollback: $out / other: $other"

# 8. A procedure with transaction control: CALL p() takes a lease, COMMITs, takes one, ROLLBACKs, takes
#    one and then fails: only the committed one stays; one with COMMIT then success keeps both.
q -c "CREATE PROCEDURE p(fail boolean) LANGUAGE plpgsql AS \$\$
      BEGIN
        PERFORM $ACQ; COMMIT;
        PERFORM $ACQ; ROLLBACK;
        PERFORM $ACQ;
        IF fail THEN RAISE division_by_zero; END IF;
      END \$\$" >/dev/null
out=$(session <<<"CALL p(true); $HELD CALL p(false);")
[ "$out" = "ERROR:  22012 held|1 held|3 " ] &&
    ok "CALL with COMMIT/ROLLBACK inside: committed leases stay, rolled-back and failed ones go" || bad "procedure: $out"

# 9. Triggers: an AFTER ROW trigger that takes a lease, its statement then failing (nothing kept); a
#    deferred constraint trigger taking one at COMMIT (kept), and at a COMMIT that then fails on a
#    deferred foreign key (nothing kept).
q <<SQL >/dev/null
CREATE TABLE w (id int PRIMARY KEY, parent int REFERENCES w DEFERRABLE INITIALLY DEFERRED, check_me int);
CREATE FUNCTION take() RETURNS trigger LANGUAGE plpgsql AS \$\$ BEGIN PERFORM $ACQ; RETURN NULL; END \$\$;
CREATE TRIGGER w_row AFTER INSERT ON w FOR EACH ROW EXECUTE FUNCTION take();
CREATE CONSTRAINT TRIGGER w_deferred AFTER UPDATE ON w DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION take();
SQL
out=$(session <<SQL
INSERT INTO w VALUES (1, NULL, 1), (2, NULL, 1 / 0);
$HELD
INSERT INTO w VALUES (10, NULL, 0);
$HELD
BEGIN; UPDATE w SET check_me = 1 WHERE id = 10; COMMIT;
$HELD
BEGIN; UPDATE w SET check_me = 2 WHERE id = 10; INSERT INTO w VALUES (11, 99, 0); COMMIT;
SQL
)
[ "$out" = "ERROR:  22012 held|0 held|1 held|2 ERROR:  23503 held|2 " ] &&
    ok "triggers: a failed statement's and a failed COMMIT's deferred trigger leases go; a committed one stays" ||
    bad "triggers: $out"

# 10. A backend ending inside an open transaction holding a new session lease (idle_in_transaction_session_
#     timeout: FATAL; pg_terminate_backend): the slot is free again, and for the survivors nothing changes.
q -c "SELECT rate_limit_define('t10', rate => 1, period => '1 hour', algorithm => 'concurrency')" >/dev/null
out=$(q_any -v VERBOSITY=sqlstate <<SQL | tr '\n' ' '
SET idle_in_transaction_session_timeout = '300ms';
BEGIN;
SELECT 'a', allowed FROM rate_limit_acquire('k10', 't10', 'session');
\\! sleep 1
SELECT 1;
SQL
)
probe1=$(q -c "SELECT allowed FROM rate_limit_acquire('k10', 't10')")
coproc DOOMED { psql -X -q -At -d "$REVIEW_DB" 2>&1; }
echo "BEGIN; SELECT pg_backend_pid(), allowed FROM rate_limit_acquire('k10', 't10', 'session');" >&"${DOOMED[1]}"
read -r -t 10 term_line <&"${DOOMED[0]}"
probe2=$(q -c "SELECT allowed FROM rate_limit_acquire('k10', 't10')")
q -c "SELECT pg_terminate_backend(${term_line%%|*}, 5000)" >/dev/null
probe3=$(q -c "SELECT allowed FROM rate_limit_acquire('k10', 't10')")
{ echo '\q' >&"${DOOMED[1]}"; } 2>/dev/null
[ "${out:0:6}" = "a|t FA" ] && [ "$probe1" = t ] && [ "${term_line#*|}" = t ] && [ "$probe2" = f ] && [ "$probe3" = t ] &&
    ok "FATAL (idle_in_transaction_session_timeout) and pg_terminate_backend inside the transaction: slot free" ||
    bad "backend ends in a transaction: $out / $probe1 $term_line $probe2 $probe3"

# 11. statement_timeout inside a PL/pgSQL exception block (caught as query_canceled) and a statement
#     timeout on COMMIT AND CHAIN's following statement: the block's lease goes, the chain's stays.
out=$(session <<SQL
SET statement_timeout = '300ms';
DO \$\$ BEGIN
  BEGIN PERFORM $ACQ; PERFORM pg_sleep(2); EXCEPTION WHEN query_canceled THEN NULL; END;
END \$\$;
RESET statement_timeout;
$HELD
BEGIN; SELECT 'chain', allowed FROM $ACQ; COMMIT AND CHAIN;
SELECT 1 / 0;
ROLLBACK;
SQL
)
[ "$out" = "held|0 chain|t ERROR:  22012 held|1 " ] &&
    ok "a cancel caught by an exception block gives back its lease; COMMIT AND CHAIN keeps it through the next failure" ||
    bad "timeouts and chains: $out"

# 12. The shared lock table full while a transaction holding a new session lease aborts: another acquire
#     fails with 53200 and takes nothing, the abort releases the lease (no memory needed), no WARNING.
q -c "SELECT rate_limit_define('t12', rate => 1, period => '1 hour', algorithm => 'concurrency')" >/dev/null
fill_out=$(mktemp)
out=$(PGOPTIONS="-c client_min_messages=warning" q_any -v VERBOSITY=sqlstate <<SQL | tr '\n' ' '
BEGIN;
SELECT 'a', allowed FROM rate_limit_acquire('k12', 't12', 'session');
\\! psql -X -q -At -v VERBOSITY=sqlstate -c "DO \\\$\\\$ BEGIN FOR i IN 1..10000000 LOOP PERFORM pg_advisory_lock(424242, i); END LOOP; END \\\$\\\$" -c "SELECT pg_sleep(4)" >$fill_out 2>&1 &
\\! sleep 2.5
SELECT 'b', allowed FROM rate_limit_acquire('k12b', 't12', 'session');
SELECT 1 / 0;
ROLLBACK;
$HELD
SQL
)
sleep 2.5
fill_err=$(head -n 1 "$fill_out")
rm -f "$fill_out"
probe=$(q -c "SELECT allowed FROM rate_limit_acquire('k12', 't12')")
[ "$fill_err" = "ERROR:  53200" ] && [ "$out" = "a|t ERROR:  53200 ERROR:  25P02 held|0 " ] && [ "$probe" = t ] &&
    ok "lock table full: the failed acquire takes nothing (53200), the abort gives the lease back, no WARNING" ||
    bad "lock table full: filler '$fill_err', out $out, probe $probe"

# 13. Shadow limit with no free slot in a transaction that aborts, an override's slots, a limit dropped
#     and defined again after the acquire in the same transaction: nothing kept but the committed lease,
#     and the shadow pass's marker (f69), which the release takes (false).
q -c "SELECT rate_limit_define('sh', rate => 1, period => '1 hour', algorithm => 'concurrency', shadow => true)" \
  -c "SELECT rate_limit_override('gold', 'one', 3)" >/dev/null
out=$(session <<SQL
SELECT 'sh1', allowed, shadow_denied FROM rate_limit_acquire('k13', 'sh', 'session');
BEGIN; SELECT 'sh2', allowed, shadow_denied FROM rate_limit_acquire('k13', 'sh', 'session'); SELECT 1 / 0; ROLLBACK;
BEGIN; SELECT 'gold', count(*) FILTER (WHERE a.allowed) FROM generate_series(1, 4) g, LATERAL rate_limit_acquire(left('gold' || g, 4), 'one', 'session') a; ROLLBACK;
BEGIN; SELECT 'dr', allowed FROM rate_limit_acquire('k13', 'one', 'session');
SELECT 'drop', rate_limit_drop('one') IS NOT NULL;
SELECT 'def', rate_limit_define('one', rate => 1, period => '1 hour', algorithm => 'concurrency') IS NOT NULL;
ROLLBACK;
$HELD
SELECT 'rel', rate_limit_release('k13', 'sh');
SQL
)
[ "$out" = "sh1|t|f sh2|t|t ERROR:  22012 gold|3 dr|t drop|t def|t held|1 rel|f held|1 " ] &&
    ok "shadow pass, override slots, drop + define in an aborted transaction: only the committed lease stays (and the shadow pass's marker, f69)" ||
    bad "shadow/override/drop: $out"

# 14. Eight sessions at every isolation level, each looping: acquire (session) in a savepoint rolled back
#     or released at random, transactions committed or rolled back at random, release sometimes; a
#     watcher samples the holders: never more than N = 3 session leases on the key, and none left after.
# A sample: the granted session-lease tags (21070) and the backends holding a key's acquire mutex (21071),
# from one pg_locks snapshot. An acquire probes a free slot's tag under the mutex by taking it for a moment
# (at transaction level), so up to one tag per mutex holder may be a probe, not a lease.
SAMPLE="SELECT count(*) FILTER (WHERE objsubid = 21070) || ' ' || count(*) FILTER (WHERE objsubid = 21071)
          FROM pg_locks WHERE locktype = 'advisory' AND granted"
q -c "SELECT rate_limit_define('hot', rate => 3, period => '1 hour', algorithm => 'concurrency')" >/dev/null
dir=$(mktemp -d)
chmod 755 "$dir"
for level in 'READ COMMITTED' 'REPEATABLE READ' 'SERIALIZABLE'; do
    cat >"$dir/${level// /_}.sql" <<SQL
\\set r random(1, 6)
BEGIN ISOLATION LEVEL $level;
SAVEPOINT s;
SELECT allowed FROM rate_limit_acquire('hk', 'hot', 'session');
\\if :r = 1
ROLLBACK TO s;
\\elif :r = 2
DO \$\$ BEGIN PERFORM rate_limit_acquire('hk', 'hot', 'session'); RAISE division_by_zero;
   EXCEPTION WHEN division_by_zero THEN NULL; END \$\$;
\\elif :r = 3
RELEASE s;
SELECT rate_limit_release('hk', 'hot');
\\else
RELEASE s;
\\endif
\\if :r = 4
ROLLBACK;
\\else
END;
\\endif
\\if :r = 5
SELECT rate_limit_release('hk', 'hot');
\\endif
\\if :r = 6
SELECT rate_limit_release('hk', 'hot');
\\endif
SQL
done
(for _ in $(seq 1 150); do
    q -c "$SAMPLE" 2>/dev/null
    sleep 0.02
done) >"$dir/samples" &
watcher=$!
pgbench -n -c 8 -j 2 -T 4 -d "$REVIEW_DB" -f "$dir/READ_COMMITTED.sql" -f "$dir/REPEATABLE_READ.sql" \
    -f "$dir/SERIALIZABLE.sql" >"$dir/pgbench.out" 2>&1
wait $watcher
most=$(awk '{ print $1 - $2 }' "$dir/samples" | sort -n | tail -n 1)
raw=$(awk '{ print $1 }' "$dir/samples" | sort -n | tail -n 1)
txns=$(grep -o 'number of transactions actually processed: [0-9]*' "$dir/pgbench.out" | grep -o '[0-9]*$')
aborted=$(grep -ci 'abort\|error' "$dir/pgbench.out")
left=$(all_held)
rm -rf "$dir"
[ -n "$most" ] && [ "$most" -le 3 ] && [ "${txns:-0}" -gt 100 ] && [ "$aborted" = 0 ] && [ "$left" = 0 ] &&
    ok "8 sessions, 3 levels, random savepoint/transaction rollbacks and releases: at most $most held of 3 (tags seen: $raw, probes included; $txns transactions), 0 left" ||
    bad "concurrency: most $most (tags $raw), transactions $txns, $aborted pgbench error lines, left $left"

# 15. Without shared_preload_libraries (the README: none needed), on a cluster of its own: the library first
#     loaded by an acquire inside a savepoint (its callbacks registered then) still gives back the lease of
#     that savepoint's rollback and of the failed transaction, and keeps the committed one.
main_env=("${PGHOST:-}" "${PGPORT:-}" "${PGUSER:-}" "${SERVER_LOG:-}")
main_log_lines=$log_lines_before
source "$here/own_cluster.sh"
own_cluster_start -c shared_preload_libraries= >/dev/null
trap 'own_cluster_stop; export PGHOST=${main_env[0]} PGPORT=${main_env[1]} PGUSER=${main_env[2]} SERVER_LOG=${main_env[3]}; cleanup_review' EXIT
psql -X -q -d postgres -c "CREATE DATABASE $REVIEW_DB" >/dev/null
out=$(q_any -v VERBOSITY=sqlstate <<SQL | tr '\n' ' '
CREATE EXTENSION pg_ratelimit;
SELECT 'preloaded', current_setting('shared_preload_libraries') = '';
SELECT 'define' FROM rate_limit_define('jobs', rate => 5, period => '1 hour', algorithm => 'concurrency');
\\c
BEGIN; SAVEPOINT s; SELECT 'a', allowed FROM $ACQ; ROLLBACK TO s; SELECT 'b', allowed FROM $ACQ; COMMIT;
$HELD
BEGIN; SELECT 'c', allowed FROM $ACQ; SELECT 1 / 0; ROLLBACK;
$HELD
SQL
)
odd=$(grep -c "you don't own a lock\|XX000\|TRAP\|PANIC\|terminated by signal" "$SERVER_LOG")
own_cluster_stop
export PGHOST=${main_env[0]} PGPORT=${main_env[1]} PGUSER=${main_env[2]} SERVER_LOG=${main_env[3]}
trap cleanup_review EXIT
log_lines_before=$main_log_lines
[ "$out" = "preloaded|t define a|t b|t held|1 c|t ERROR:  22012 held|1 " ] && [ "$odd" = 0 ] &&
    ok "not preloaded, first loaded inside a savepoint: the rolled-back savepoint's and transaction's leases go, the committed one stays" ||
    bad "not preloaded: $out (odd log lines: $odd)"

# Nothing of the review's leases is left, and the server logged no lock-manager WARNING or internal error.
left=$(all_held)
[ "$left" = 0 ] || bad "$left session leases left after every session ended"
if [ -n "${SERVER_LOG:-}" ] && [ -r "$SERVER_LOG" ]; then
    odd=$(tail -n +$((log_lines_before + 1)) "$SERVER_LOG" | grep -c "you don't own a lock\|XX000\|TRAP\|PANIC")
    [ "$odd" = 0 ] && ok "server log: no \"you don't own a lock\", XX000, TRAP or PANIC" || bad "server log: $odd odd lines"
fi
[ "$(crash_count)" = 0 ] || bad "the server log shows a crash"
[ $failed -eq 0 ] && holds "every lease3 attack held (16 checks)"
echo "REPRODUCED: an attack that held no longer holds"
exit 1
