#!/usr/bin/env bash
# Finding 75 (low, README): the README's concurrency section says a limit "keeps its period and its kind
# while it exists ... define another name, or drop the limit and define it again, which forgets the
# session leases held". A lease is a lock whose tag is a hash of (limit name, key, slot, band) with no
# epoch: rate_limit_drop + rate_limit_define of the same name and period forgets nothing; the session
# leases held still count (the same section says so further down: "A lease has no epoch: a dropped and
# re-created limit of the same name and period still counts the old session leases until they end").
# The two sentences contradict each other; a DBA following the first to free stuck slots frees none.
# Attack: N = 1 'exports', session A takes the slot with a session lease and stays connected; the DBA runs
# rate_limit_drop + rate_limit_define (same period, then also another period); another session probes.
# Expected: what the README says. Fixed in the README: "drop the limit and define it again with another
# period, which forgets the session leases held (with the same period they still count until they end: a
# lease has no epoch)". The script checks both: same period, the slot stays held; another period, free.
here=$(dirname "$0")
source "$here/lib.sh"
setup_review
trap cleanup_review EXIT
export PGOPTIONS="-c client_min_messages=error"
q -c "SELECT rate_limit_define('exports', rate => 1, period => '1 hour', algorithm => 'concurrency')" >/dev/null || exit 2
probe="\\! psql -X -q -At -c \"SELECT 'probe', allowed FROM rate_limit_acquire('acme', 'exports')\""
redefine="\\! psql -X -q -At -c \"SELECT rate_limit_drop('exports')\" -c \"SELECT rate_limit_define('exports', rate => 1, period => '1 hour', algorithm => 'concurrency')\" >/dev/null"
redefine_other="\\! psql -X -q -At -c \"SELECT rate_limit_drop('exports')\" -c \"SELECT rate_limit_define('exports', rate => 1, period => '2 hours', algorithm => 'concurrency')\" >/dev/null"
out=$(q_any -v VERBOSITY=sqlstate <<SQL | tr '\n' ' '
SELECT 'A', allowed FROM rate_limit_acquire('acme', 'exports', 'session');
$probe
$redefine
$probe
$redefine_other
$probe
SQL
)
echo "A's lease, probe before, after drop + define (same period), after drop + define (another period): $out"
[ "$out" = "A|t probe|f probe|f probe|t " ] &&
    holds "drop + define forgets the session leases held with another period, not with the same one, as the README says"
reproduced "drop + define: $out (expected A|t probe|f probe|f probe|t)"
