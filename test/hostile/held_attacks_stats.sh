#!/usr/bin/env bash
# Attacks on statistics (issue 12 item 6: rate_limit_stats, rate_limit_stats_reset, pg_ratelimit.stats and
# pg_ratelimit.stats_limits; commits 1e7ff36..1c3da67) that held during the review. Each check prints
# "ok: ..." or "FAILED: ..."; the script fails if any stops holding. It starts a cluster of its own
# (own_cluster.sh: preloaded, an empty statistics table whatever other scripts left in run.sh's server).
here=$(dirname "$0")
REVIEW_DB=stats_review
source "$here/lib.sh"
source "$here/own_cluster.sh"
own_cluster_start -c max_prepared_transactions=2

failed=0
ok() { echo "ok: $*"; }
bad() { echo "FAILED: $*"; failed=1; }
q -d postgres -c "CREATE DATABASE stats_review" -c "CREATE DATABASE stats_other" -c "CREATE ROLE stats_eve LOGIN" || exit 2
for db in stats_review stats_other; do q -d $db -c "CREATE EXTENSION pg_ratelimit" || exit 2; done
as_eve() { psql -X -q -At -d stats_review -U stats_eve "$@" 2>&1; }
row() { q -c "SELECT requests, allowed, denied, shadow_denied, checks, units_consumed, units_reserved, units_refunded, retries
              FROM rate_limit_stats WHERE limit_name = '$1'" | tr '|' ' '; }

# 1. Bad arguments to rate_limit_stats_reset: empty, too long, unknown, a name differing by a trailing
#    backslash or case: a SQLSTATE each (42704, 22001), never XX000, never a silent reset of another row.
q -c "SELECT rate_limit_define('a', 10, '1 hour')" -c "SELECT count(*) FROM rate_limit_request('k', 'a')" >/dev/null
out=$(q_any -v VERBOSITY=sqlstate -c "SELECT rate_limit_stats_reset('')" -c "SELECT rate_limit_stats_reset(repeat('x', 200))" \
    -c "SELECT rate_limit_stats_reset('nope')" -c "SELECT rate_limit_stats_reset(E'a\\\\')" -c "SELECT rate_limit_stats_reset('A')")
[ "$(grep -c '^ERROR:  42704' <<<"$out")" = 4 ] && [ "$(grep -c '^ERROR:  22001' <<<"$out")" = 1 ] &&
    [ "$(row a | cut -d' ' -f1)" = 1 ] && ok "bad names to rate_limit_stats_reset: 42704 x4, 22001, 'a' untouched" ||
    bad "bad names: $out / $(row a)"

# 2. Privileges: a role without grants resets nothing (by name or all), cannot turn pg_ratelimit.stats off
#    to hide its calls (SET, set_config, connection options, ALTER ROLE ... SET of its own), but reads the view.
out=$(as_eve -v VERBOSITY=sqlstate -c "SELECT rate_limit_stats_reset('a')" -c "SELECT rate_limit_stats_reset()" \
    -c "SET pg_ratelimit.stats = off" -c "SELECT set_config('pg_ratelimit.stats', 'off', false)" \
    -c "ALTER ROLE stats_eve SET pg_ratelimit.stats = off" -c "SELECT 'reads', requests FROM rate_limit_stats WHERE limit_name = 'a'")
opts=$(PGOPTIONS="-c pg_ratelimit.stats=off" psql -X -q -At -d stats_review -U stats_eve -c "SELECT 1" 2>&1)
[ "$(grep -c '^ERROR:  42501' <<<"$out")" = 5 ] && grep -q '^reads|1$' <<<"$out" && grep -q 'permission denied to set parameter' <<<"$opts" &&
    ! grep -q '^1$' <<<"$opts" && ok "no grants: reset (x2), SET, set_config, ALTER ROLE SET refused (42501), connection option refused; view readable" ||
    bad "privileges: $out / $opts"
as_eve -c "SELECT rate_limit_request('k', 'a')" >/dev/null
[ "$(row a | cut -d' ' -f1)" = 2 ] && ok "the role's call is counted" || bad "the role's call: $(row a)"

# 3. Exact counts through every function: request allowed/denied, reservation, check (not a request),
#    refund, settle both ways, throttle, enforce (denial raised), request_many, shadow.
out=$(q_any -v VERBOSITY=sqlstate <<'SQL'
SELECT rate_limit_define('c', 4, '1 hour', max_reserved => 2);
SELECT allowed FROM rate_limit_request('k', 'c', 1.5);
SELECT allowed FROM rate_limit_request('k', 'c', 1, reserve => true);
SELECT allowed FROM rate_limit_check('k', 'c', 3);
SELECT allowed FROM rate_limit_check('k', 'c', 1);
SELECT allowed FROM rate_limit_refund('k', 'c', 0.5);
SELECT allowed FROM rate_limit_settle('k', 'c', 1, 1.25);
SELECT allowed FROM rate_limit_settle('k', 'c', 1, 0.75);
SELECT limited FROM rate_limit_throttle('k', 'c', 1);
SELECT rate_limit_enforce('k', 'c', 2);
SELECT count(*) FROM rate_limit_request_many(ARRAY['x', 'y', 'k'], 'c', ARRAY[1, 1, 4]::float8[]);
SELECT rate_limit_define('s', 1, '1 hour', shadow => true);
SELECT shadow_denied FROM rate_limit_request('k', 's');
SELECT shadow_denied FROM rate_limit_request('k', 's');
SQL
)
# c: requests 1.5 ok, 1 reserved ok, throttle 1 ok, enforce 2 denied, many: x, y ok, k (4) denied.
got="$(row c) / $(row s)"
exp="7 5 2 0 2 4.75 1 0.75 0 / 2 2 0 1 0 1 0 0 0"
grep -q '^ERROR:  RL001' <<<"$out" && [ "$got" = "$exp" ] && ok "counts after known calls: c = $(row c); s = $(row s)" ||
    bad "counts: got '$got', expected '$exp' ($out)"

# 4. Per database: the same name in another database has its own row; a reset there touches nothing here.
q -d stats_other -c "SELECT rate_limit_define('a', 10, '1 hour')" -c "SELECT rate_limit_request('k', 'a')" \
  -c "SELECT rate_limit_stats_reset()" -c "SELECT rate_limit_request('k', 'a')" >/dev/null
other=$(q -d stats_other -c "SELECT string_agg(coalesce(limit_name, '-') || '=' || requests, ',') FROM rate_limit_stats")
[ "$(row a | cut -d' ' -f1)" = 2 ] && [ "$other" = "a=1" ] && ok "same name in two databases: separate rows; a reset there leaves this one" ||
    bad "per database: here $(row a), there $other"

# 5. Reset by name zeroes one row (stats_reset moves), the others keep theirs; a dropped limit keeps its row
#    until a reset, and a redefinition keeps the counters.
before=$(q -c "SELECT stats_reset FROM rate_limit_stats WHERE limit_name = 'c'")
q -c "SELECT rate_limit_stats_reset('c')" -c "SELECT rate_limit_define('a', 20, '1 hour')" -c "SELECT rate_limit_drop('s')" >/dev/null
after=$(q -c "SELECT stats_reset > '$before' FROM rate_limit_stats WHERE limit_name = 'c'")
[ "$(row c)" = "0 0 0 0 0 0 0 0 0" ] && [ "$after" = t ] && [ "$(row a | cut -d' ' -f1)" = 2 ] && [ "$(row s | cut -d' ' -f1)" = 2 ] &&
    ok "reset('c') zeroes c only; a redefined keeps 2; dropped s keeps its row" || bad "reset by name: c $(row c) ($after), a $(row a), s $(row s)"
out=$(q_any -v VERBOSITY=sqlstate -c "SELECT rate_limit_stats_reset('s')")
[ -z "$out" ] && ok "a dropped limit's row can be zeroed by name" || bad "reset of a dropped limit's row: $out"

# 6. Not transactional, as documented: a rolled-back request and a prepared then rolled-back one count once.
q -c "SELECT rate_limit_define('t', 10, '1 hour')" >/dev/null
q_any <<'SQL' >/dev/null
BEGIN; SELECT rate_limit_request('k', 't'); ROLLBACK;
BEGIN; SELECT rate_limit_request('k', 't'); PREPARE TRANSACTION 'stats_t'; ROLLBACK PREPARED 'stats_t';
BEGIN; SELECT rate_limit_request('k', 't'); PREPARE TRANSACTION 'stats_t2'; COMMIT PREPARED 'stats_t2';
SQL
[ "$(row t | cut -d' ' -f1-3)" = "3 3 0" ] && ok "rolled back, prepared then rolled back, prepared then committed: 3 requests" ||
    bad "transactions: $(row t)"

# 7. Eight sessions on one key at READ COMMITTED, REPEATABLE READ and SERIALIZABLE, on a table limit and a
#    memory limit, with resets by name of another limit and a terminated backend alongside: every call
#    that returned is counted once (allowed + denied = calls); no crash.
q -c "SELECT rate_limit_define('busy', 100, '1 second')" -c "SELECT rate_limit_define('busy_mem', 100, '1 second', storage => 'memory')" >/dev/null
for level in 'read committed' 'repeatable read' serializable; do
    q -c "SELECT rate_limit_stats_reset('busy')" -c "SELECT rate_limit_stats_reset('busy_mem')" >/dev/null
    echo "SELECT rate_limit_request('hot', 'busy'); SELECT rate_limit_request('hot', 'busy_mem');" >"$OWN_DIR/calls.sql"
    PGOPTIONS="-c default_transaction_isolation=${level// /\\ }" pgbench -n -c 8 -t 100 --max-tries=1000 -f "$OWN_DIR/calls.sql" stats_review \
        >"$OWN_DIR/bench.out" 2>&1 &
    bench=$!
    for _ in $(seq 1 20); do q -c "SELECT rate_limit_stats_reset('a')" >/dev/null; done
    wait $bench
    processed=$(grep -o 'number of transactions actually processed: [0-9/]*' "$OWN_DIR/bench.out" | grep -o '[0-9]*/' | tr -d /)
    retried=$(grep -o 'number of transactions retried: [0-9]*' "$OWN_DIR/bench.out" | grep -o '[0-9]*$')
    got=$(q -c "SELECT sum(requests) FILTER (WHERE limit_name = 'busy') || ' ' || sum(requests) FILTER (WHERE limit_name = 'busy_mem') FROM rate_limit_stats")
    # A call that failed with 40001 (retried by pgbench, --max-tries) decided nothing and is not counted;
    # busy_mem comes after it in the script, so it is called once per transaction that succeeded.
    [ "$processed" = 800 ] && [ "$got" = "800 800" ] &&
        ok "$level: 8 x 100 calls on each of busy and busy_mem counted exactly ($got; ${retried:-0} transactions retried)" ||
        bad "$level: $got after $processed transactions: $(grep -v '^progress' "$OWN_DIR/bench.out" | head -5)"
done
q -c "SELECT pg_sleep(30) FROM rate_limit_request('killed', 't')" >/dev/null 2>&1 &
sleep 1
q -c "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE query LIKE '%pg_sleep(30)%' AND pid <> pg_backend_pid()" >/dev/null
wait
[ "$(row t | cut -d' ' -f1)" = 4 ] && ok "a backend terminated after its call: counted once (4)" || bad "terminated backend: $(row t)"

# 8. The overflow row appears only once something overflowed; rows are those of this database only.
[ "$(q -c "SELECT count(*) FROM rate_limit_stats WHERE limit_name IS NULL")" = 0 ] &&
    [ "$(q -c "SELECT count(*) FROM rate_limit_stats")" = "$(q -c "SELECT count(DISTINCT limit_name) FROM rate_limit_stats")" ] &&
    ok "no overflow row while nothing overflowed; one row per limit" || bad "rows: $(q -c "SELECT * FROM rate_limit_stats")"

# 9. pg_ratelimit.stats = off (a superuser) counts nothing, on counts again; no crash anywhere.
q -c "SET pg_ratelimit.stats = off" -c "SELECT rate_limit_request('k', 't')" -c "RESET pg_ratelimit.stats" -c "SELECT rate_limit_request('k', 't')" >/dev/null
[ "$(row t | cut -d' ' -f1)" = 5 ] && ok "stats off: not counted; on again: counted" || bad "stats off: $(row t)"
[ "$(crash_count)" = 0 ] && ok "no crash in the server log" || bad "crashes: $(crash_count)"

[ $failed -eq 0 ] && holds "every attack on statistics in this script held"
echo "REPRODUCED: an attack on statistics stopped holding"
exit 1
