#!/usr/bin/env bash
# Finding 67 (low): the README's "Who holds leases" query hides the leases of prepared transactions
# whenever any backend is in an acquire (of any key, any limit, any database). A prepared transaction's
# locks have pid NULL in pg_locks, and the query's `pid NOT IN (SELECT pid FROM l WHERE objsubid = 21071)`
# is NULL, not true, for a NULL pid as soon as the subquery has a row. The README says PREPARE TRANSACTION
# hands the transaction lease to the prepared transaction, which holds it until COMMIT/ROLLBACK PREPARED;
# a DBA looking for what blocks a key (a forgotten prepared transaction is the classic culprit) sees it
# only when no acquire is running: on a busy server, almost never.
# Attack: a prepared transaction holds the only slot of a key; another session acquires leases of an
# unrelated limit with N = 10,000 in a loop (each acquire probes for a few ms); the README's query runs 20
# times meanwhile.
# Expected: every run shows the prepared transaction's lease (a row with pid NULL, count 1).
# Suggested fix: `pid IS NULL OR pid NOT IN (...)` (or NOT EXISTS (SELECT FROM l m WHERE m.pid = l.pid AND
# m.objsubid = 21071)) in the README's query, and a word that pid NULL is a prepared transaction.
# Fixed in the README: NOT EXISTS instead of NOT IN; a row with pid NULL is a prepared transaction's.
here=$(dirname "$0")
source "$here/lib.sh"
setup_review
finish() { q -c "ROLLBACK PREPARED 'f67_prepared'" >/dev/null 2>&1; cleanup_review; }
trap finish EXIT
export PGOPTIONS="-c client_min_messages=error"
q -c "SELECT rate_limit_define('one', rate => 1, period => '1 hour', algorithm => 'concurrency')" \
  -c "SELECT rate_limit_define('big', rate => 10000, period => '1 hour', algorithm => 'concurrency')" >/dev/null || exit 2
q -c "BEGIN" -c "SELECT 'prepared' FROM rate_limit_acquire('acme', 'one') WHERE allowed" -c "PREPARE TRANSACTION 'f67_prepared'" >/dev/null || exit 2
# The README's query, verbatim.
holders="WITH l AS MATERIALIZED (SELECT pid, objsubid FROM pg_locks WHERE locktype = 'advisory' AND granted)
SELECT pid, objsubid = 21070 AS session, count(*) FROM l
 WHERE objsubid IN (21069, 21070)
   AND NOT EXISTS (SELECT FROM l AS m WHERE m.pid = l.pid AND m.objsubid = 21071)
 GROUP BY 1, 2;"
control=$(q -c "$holders" | tr '\n' ' ')
[ "$control" = "|f|1 " ] || { echo "control (no acquire running): expected '|f|1', got '$control'"; exit 2; }
(for _ in $(seq 1 120); do echo "SELECT allowed FROM rate_limit_acquire('other', 'big');"; done | q -f - >/dev/null) &
prober=$!
sleep 0.3
missing=0
for _ in $(seq 1 20); do
    out=$(q -c "$holders" | tr '\n' ' ')
    [ "$out" = "|f|1 " ] || missing=$((missing + 1))
done
wait "$prober"
[ "$missing" -eq 0 ] && holds "the holders query shows the prepared transaction's lease in 20 of 20 runs during acquires"
reproduced "the holders query left out the prepared transaction's lease in $missing of 20 runs while another backend acquired (no acquire running: shown)"
