#!/usr/bin/env bash
# Attacks on transactional session-lease releases and marker lifetimes (commit 5995c63) that held: each
# check asserts the right behaviour, so the script fails if one regresses. Findings of the same review:
# f71 (a rolled-back release spends the marker), f72 (the marker cap evicts a marker beside a held lease).
here=$(dirname "$0")
source "$here/lib.sh"
setup_review
failed=0
ok() { echo "ok: $*"; }
bad() { echo "FAILED: $*"; failed=1; }
finish() { q -c "ROLLBACK PREPARED 'leases5_2pc'" >/dev/null 2>&1; cleanup_review; }
trap finish EXIT
export PGOPTIONS="-c client_min_messages=warning"
q -c "SELECT rate_limit_define('one', rate => 1, period => '1 hour', algorithm => 'concurrency')" \
  -c "SELECT rate_limit_define('two', rate => 2, period => '1 hour', algorithm => 'concurrency')" \
  -c "SELECT rate_limit_define('three', rate => 3, period => '1 hour', algorithm => 'concurrency')" \
  -c "SELECT rate_limit_define('watch', rate => 1, period => '1 hour', algorithm => 'concurrency', shadow => true)" \
  >/dev/null || exit 2
HELD="SELECT 'held', count(*) FROM pg_locks WHERE objsubid = 21070 AND pid = pg_backend_pid();"
# Another session's acquire (a session lease it keeps only for its statement: it ends with its session).
other() { echo "\\! psql -X -q -At -c \"SELECT 'other', allowed FROM rate_limit_acquire('$1', '$2', 'session')\""; }
# One session runs the SQL given on stdin; every line joined by spaces (errors as SQLSTATEs).
session() { q_any -v VERBOSITY=sqlstate | tr '\n' ' '; }

# 1. A release pending at commit while pg_advisory_unlock_all() runs in the same transaction, then an
#    acquire of the same key takes the same slot (same band: the same lock tag) in that transaction: the
#    commit must not free the new lease with the old one's pending release, and nothing warns "you don't
#    own a lock". Then the same with a ROLLBACK (the new lease goes, a marker stays).
out=$(session <<SQL
SELECT 'A', allowed FROM rate_limit_acquire('k1', 'one', 'session');
BEGIN;
SELECT 'rel', rate_limit_release('k1', 'one');
SELECT pg_advisory_unlock_all();
SELECT 'C', allowed FROM rate_limit_acquire('k1', 'one', 'session');
COMMIT;
$HELD
$(other k1 one)
SELECT 'rel', rate_limit_release('k1', 'one');
$HELD
SELECT 'A2', allowed FROM rate_limit_acquire('k1b', 'one', 'session');
BEGIN;
SELECT 'rel', rate_limit_release('k1b', 'one');
SELECT pg_advisory_unlock_all();
SELECT 'C2', allowed FROM rate_limit_acquire('k1b', 'one', 'session');
ROLLBACK;
$HELD
SELECT 'rel', rate_limit_release('k1b', 'one');
$(other k1b one)
SQL
)
[ "$out" = "A|t rel|t  C|t held|1 other|f rel|t held|0 A2|t rel|t  C2|t held|0 rel|f other|t " ] &&
    ok "pending release + pg_advisory_unlock_all + same-tag acquire: the new lease survives the commit, no warning" ||
    bad "pending release + pg_advisory_unlock_all: $out"

# 2. A release pending at commit while the lease expires in the same transaction (pinned clock): the
#    expired lease's lock goes at the next acquire, the slot is free for others, the rollback brings
#    back no lease, and no warning.
T0="2026-01-01 00:00:00+00"
T3="2026-01-01 03:00:00+00"
out=$(session <<SQL
SET pg_ratelimit.fake_now = '$T0';
SELECT 'A', allowed FROM rate_limit_acquire('k2', 'one', 'session');
BEGIN;
SELECT 'rel', rate_limit_release('k2', 'one');
SET pg_ratelimit.fake_now = '$T3';
SELECT 'x', allowed FROM rate_limit_acquire('k2x', 'one', 'session');
$HELD
\\! psql -X -q -At -c "SET pg_ratelimit.fake_now = '$T3'" -c "SELECT 'other', allowed FROM rate_limit_acquire('k2', 'one', 'session')"
ROLLBACK;
SET pg_ratelimit.fake_now = '$T3';
$HELD
SELECT 'rel', rate_limit_release('k2', 'one');
SELECT 'relx', rate_limit_release('k2x', 'one');
SQL
)
[ "$out" = "A|t rel|t x|t held|1 other|t held|0 rel|f relx|f " ] &&
    ok "pending release of a lease that expires in the transaction: slot free, nothing comes back, no warning" ||
    bad "pending release + expiry: $out"

# 3. A release in a subtransaction that commits (RELEASE SAVEPOINT, a PL/pgSQL block that ends well),
#    then the parent aborts: the release is undone, the slot stayed held throughout, one release later
#    frees it.
out=$(session <<SQL
SELECT 'A', allowed FROM rate_limit_acquire('k3', 'one', 'session');
BEGIN;
SAVEPOINT s;
SELECT 'rel', rate_limit_release('k3', 'one');
RELEASE s;
DO \$\$ BEGIN BEGIN PERFORM rate_limit_release('k3', 'one'); END; END \$\$;
$(other k3 one)
ROLLBACK;
$HELD
$(other k3 one)
SELECT 'rel', rate_limit_release('k3', 'one');
SELECT 'rel', rate_limit_release('k3', 'one');
$HELD
$(other k3 one)
SQL
)
[ "$out" = "A|t rel|t other|f held|1 other|f rel|t rel|f held|0 other|t " ] &&
    ok "release in a committed subtransaction, parent aborted: undone, released once after" ||
    bad "subtransaction release, parent aborted: $out"

# 4. Releases of N leases in one transaction: each takes another lease (N = 3: t t t, then f); none
#    frees a slot before COMMIT; a rollback keeps all three; two releases committed leave one.
out=$(session <<SQL
SELECT 'A', count(*) FILTER (WHERE allowed) FROM (SELECT (rate_limit_acquire('k4', 'three', 'session')).allowed FROM generate_series(1, 3)) s;
BEGIN;
SELECT 'rel', rate_limit_release('k4', 'three') FROM generate_series(1, 4);
$(other k4 three)
ROLLBACK;
$HELD
BEGIN;
SELECT 'rel', rate_limit_release('k4', 'three');
SELECT 'rel', rate_limit_release('k4', 'three');
$(other k4 three)
COMMIT;
$HELD
\\! psql -X -q -At -c "SELECT 'others', count(*) FILTER (WHERE allowed) FROM (SELECT (rate_limit_acquire('k4', 'three', 'session')).allowed FROM generate_series(1, 3)) s"
SQL
)
[ "$out" = "A|3 rel|t rel|t rel|t rel|f other|f held|3 rel|t rel|t other|f held|1 others|2 " ] &&
    ok "N releases in one transaction: each another lease, none before COMMIT, all undone by ROLLBACK" ||
    bad "N releases in one transaction: $out"

# 5. A release, then PREPARE TRANSACTION, then ROLLBACK PREPARED: as documented, PREPARE applies it (the
#    slot is free, a second release frees nothing); no N + 1 from the rollback.
out=$(session <<SQL
SELECT 'A', allowed FROM rate_limit_acquire('k5', 'one', 'session');
BEGIN;
SELECT 'rel', rate_limit_release('k5', 'one');
PREPARE TRANSACTION 'leases5_2pc';
$HELD
ROLLBACK PREPARED 'leases5_2pc';
$HELD
SELECT 'rel', rate_limit_release('k5', 'one');
$(other k5 one)
SQL
)
[ "$out" = "A|t rel|t held|0 held|0 rel|f other|t " ] &&
    ok "release + PREPARE + ROLLBACK PREPARED: applied at PREPARE (documented), nothing held twice" ||
    bad "release + PREPARE + ROLLBACK PREPARED: $out"

# 6. A release of the open transaction's pending-released slot: the session's own acquire in the same
#    transaction after its release is denied (the slot frees at commit), and after COMMIT the key is free.
out=$(session <<SQL
SELECT 'A', allowed FROM rate_limit_acquire('k6', 'one', 'session');
BEGIN;
SELECT 'rel', rate_limit_release('k6', 'one');
SELECT 'again', allowed FROM rate_limit_acquire('k6', 'one', 'session');
COMMIT;
$HELD
$(other k6 one)
SQL
)
[ "$out" = "A|t rel|t again|f held|0 other|t " ] &&
    ok "acquire after a pending release in one transaction: denied until COMMIT (N never exceeded)" ||
    bad "acquire after a pending release: $out"

# 7. A release right after a failure: in autocommit, and inside a transaction, the marker is taken
#    first (false) and a second release in that transaction frees the lease at COMMIT.
out=$(session <<SQL
SELECT 'A', allowed FROM rate_limit_acquire('k7', 'two', 'session');
SELECT a.allowed, 1 / (a.remaining - a.remaining) FROM rate_limit_acquire('k7', 'two', 'session') a;
BEGIN;
SELECT 'rel', rate_limit_release('k7', 'two');
$HELD
SELECT 'rel', rate_limit_release('k7', 'two');
$HELD
COMMIT;
$HELD
SELECT 'B', allowed FROM rate_limit_acquire('k7b', 'two', 'session');
SELECT a.allowed, 1 / (a.remaining - a.remaining) FROM rate_limit_acquire('k7b', 'two', 'session') a;
SELECT 'rel', rate_limit_release('k7b', 'two');
$HELD
SQL
)
[ "$out" = "A|t ERROR:  22012 rel|f held|1 rel|t held|1 held|0 B|t ERROR:  22012 rel|f held|1 " ] &&
    ok "release after a failure, in a transaction and in autocommit: the marker first, the lease at COMMIT" ||
    bad "release after a failure: $out"

# 8. Markers and the period (pinned clock): a marker beside a lease; within the period the release takes
#    the marker (the lease stays); once the period has passed both are gone (the lease's band is never
#    later than its marker's): the release frees nothing, and another session gets every slot.
out=$(session <<SQL
SET pg_ratelimit.fake_now = '$T0';
SELECT 'A', allowed FROM rate_limit_acquire('k8', 'two', 'session');
SET pg_ratelimit.fake_now = '2026-01-01 00:50:00+00';
SELECT a.allowed, 1 / (a.remaining - a.remaining) FROM rate_limit_acquire('k8', 'two', 'session') a;
SET pg_ratelimit.fake_now = '2026-01-01 01:05:00+00';
SELECT 'rel', rate_limit_release('k8', 'two');
$HELD
SET pg_ratelimit.fake_now = '$T3';
SELECT 'rel', rate_limit_release('k8', 'two');
$HELD
\\! psql -X -q -At -c "SET pg_ratelimit.fake_now = '$T3'" -c "SELECT 'others', count(*) FILTER (WHERE allowed) FROM (SELECT (rate_limit_acquire('k8', 'two', 'session')).allowed FROM generate_series(1, 3)) s"
SQL
)
[ "$out" = "A|t ERROR:  22012 rel|f held|1 rel|f held|0 others|2 " ] &&
    ok "a marker and its lease across the period: the marker never outlives the lease it protects" ||
    bad "markers and the period: $out"

# 9. A shadow pass's marker in a transaction that rolls back stays (the caller still releases): the
#    release pairs with it, the session's real lease stays until its own release.
out=$(session <<SQL
SELECT 'A', allowed FROM rate_limit_acquire('k9', 'watch', 'session');
BEGIN;
SELECT 'S', allowed, shadow_denied FROM rate_limit_acquire('k9', 'watch', 'session');
ROLLBACK;
SELECT 'rel', rate_limit_release('k9', 'watch');
$HELD
SELECT 'rel', rate_limit_release('k9', 'watch');
$HELD
SQL
)
[ "$out" = "A|t S|t|t rel|f held|1 rel|t held|0 " ] &&
    ok "a shadow pass in a rolled-back transaction: its marker stays, the release pairs with it" ||
    bad "shadow pass rolled back: $out"

warnings=0
[ -n "${SERVER_LOG:-}" ] && warnings=$(grep -c "you don't own a lock" "$SERVER_LOG")
[ "$warnings" -eq 0 ] && ok "no \"you don't own a lock\" in the server log" || bad "$warnings \"you don't own a lock\" warnings"
[ "$failed" -eq 0 ] || { echo "FAILED: an attack on transactional releases and markers no longer holds"; exit 1; }
holds "transactional releases and markers: 10 checks (pg_advisory_unlock_all and same-tag acquire, expiry, subtransactions, N releases, 2PC, own acquire, autocommit vs transaction, the period, shadow, the log)"
