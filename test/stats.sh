#!/usr/bin/env bash
# Statistics (rate_limit_stats, extension/stats/stats.hpp) on real servers, what pg_regress cannot show:
# 1. Exact under concurrency: pgbench, 8 clients, N calls -> requests = N, for a durable limit on a hot key
#    (allowed = exactly the allowance), on uniform keys, and for a memory limit; retries only where races
#    were lost (READ COMMITTED on the hot durable key), never on memory.
# 2. Per database: the same limit name in two databases counts apart; a reset of all in one leaves the other.
# 3. A full table: with pg_ratelimit.stats_limits = 10, limits beyond it count in the overflow row (limit_name
#    NULL), the backend says so once with a WARNING, and a reset of all frees the rows (reusable after the
#    grace second).
# 4. A backend killed with kill -9 (the server reinitializes shared memory): counting starts over, and
#    sessions that remembered entries count correctly afterwards.
# 5. Without shared_preload_libraries: requests work and are not counted, the view and the reset raise 55000
#    with a hint naming shared_preload_libraries, pg_ratelimit.stats can still be shown.
# Environment: ACCESS_PATH (direct by default).
set -euo pipefail
source "$(dirname "$0")/../scripts/common.sh"

ensure_packages "${PACKAGES[@]}"
build_and_install_extension
COMMON=(-c pg_ratelimit.access_path="${ACCESS_PATH:-direct}")

CASES=0
FAILURES=0
pass() { CASES=$((CASES + 1)); echo "ok: $*"; }
fail() { CASES=$((CASES + 1)); FAILURES=$((FAILURES + 1)); echo "FAILED: $*"; }
check() {
    if [ "$2" = "$3" ]; then pass "$1 ($2)"; else fail "$1: expected '$3', got '$2'"; fi
}
check_match() {
    if [[ "$2" =~ $3 ]]; then pass "$1 ($2)"; else fail "$1: expected to match /$3/, got '$2'"; fi
}
q() { psql -X -At -q -v ON_ERROR_STOP=1 "$@"; }
# The counters of a limit: requests|allowed|denied|units_consumed|retries
counts() {
    q -d "${2:-postgres}" -c "SELECT concat_ws('|', requests, allowed, denied, units_consumed, retries)
                                FROM rate_limit_stats WHERE limit_name = '$1'"
}
# SQLSTATE|message|hint of the error a statement raises.
error_of() {
    local out state message hint
    if out=$(q -v VERBOSITY=verbose -c "$1" 2>&1 >/dev/null); then
        echo "no error"
        return 0
    fi
    state=$(sed -n 's/^ERROR:  \([0-9A-Z]\{5\}\): .*/\1/p' <<<"$out" | head -n 1)
    message=$(sed -n 's/^ERROR:  [0-9A-Z]\{5\}: //p' <<<"$out" | head -n 1)
    hint=$(sed -n 's/^HINT:  //p' <<<"$out" | head -n 1)
    echo "$state|$message|$hint"
}

cluster_init stats
cluster_start stats "${COMMON[@]}" -c shared_preload_libraries=pg_ratelimit -c pg_ratelimit.stats_limits=10
use_cluster stats
q -c 'CREATE EXTENSION pg_ratelimit'

# ==== 1. Exact under concurrency ===========================================================================
log "1. pgbench, 8 clients"
q >/dev/null <<'SQL'
SELECT rate_limit_define('hot', rate => 100, period => '1000 days');
SELECT rate_limit_define('wide', rate => 1e9, period => '1 second');
SELECT rate_limit_define('mem', rate => 100, period => '1000 days', storage => 'memory');
SQL

work=$RUN_DIR/stats_pgbench
mkdir -p "$work"
echo "SELECT rate_limit_request('k', 'hot');" >"$work/hot.sql"
printf '%s\n' '\set k random(1, 1000)' "SELECT rate_limit_request('k' || :k, 'wide', 0.5);" >"$work/wide.sql"
echo "SELECT rate_limit_request('k', 'mem');" >"$work/mem.sql"
for script in hot wide mem; do
    out=$("$PG_BIN/pgbench" -n -c 8 -j 2 -t 250 -f "$work/$script.sql" postgres 2>&1) \
        || { echo "$out"; fail "pgbench on $script"; continue; }
    check "pgbench $script: 8 x 250 calls" "$(sed -n 's/^number of transactions actually processed: \([0-9]*\).*/\1/p' <<<"$out")" 2000
done
IFS='|' read -r requests allowed denied units retries <<<"$(counts hot)"
check "hot durable key: requests, allowed (the allowance), denied, units" "$requests|$allowed|$denied|$units" \
    "2000|100|1900|100"
# Under READ COMMITTED the admitted writers of one row wait for each other and lose races: some retries.
check_match "hot durable key: lost races counted as retries" "$retries" '^[1-9][0-9]*$'
# (Two clients may draw the same key at once: retries there are possible, not counted on.)
check "uniform keys: requests|allowed|denied|units" "$(counts wide | cut -d'|' -f1-4)" "2000|2000|0|1000"
check "hot memory key: requests|allowed|denied|units|retries (never a retry)" "$(counts mem)" "2000|100|1900|100|0"

# ==== 2. Per database ======================================================================================
log "2. per database"
q -c 'CREATE DATABASE other'
q -d other -c 'CREATE EXTENSION pg_ratelimit' -c "SELECT rate_limit_define('hot', rate => 100, period => '1000 days')" \
    -c "SELECT rate_limit_request('k', 'hot', 3)" >/dev/null
check "the other database counts its own calls of 'hot'" "$(counts hot other)" "1|1|0|3|0"
check "this database's 'hot' is untouched" "$(counts hot | cut -d'|' -f1)" 2000
q -d other -c 'SELECT rate_limit_stats_reset()' >/dev/null
check "a reset of all in the other database: its rows are gone" \
    "$(q -d other -c 'SELECT count(*) FROM rate_limit_stats')" 0
check "... and this database keeps its own" "$(q -c 'SELECT count(*) FROM rate_limit_stats')" 3

# ==== 3. A full table ======================================================================================
log "3. pg_ratelimit.stats_limits = 10: the overflow row"
q -c 'SELECT rate_limit_stats_reset()' >/dev/null
sleep 1.2  # freed entries are reused only after a second
q -c "SELECT rate_limit_define('l' || i, 10, '1 hour') FROM generate_series(1, 12) AS i" >/dev/null
warnings=$(q -c "SELECT count(*) FROM generate_series(1, 12) AS i, rate_limit_request('k', 'l' || i)" 2>&1 >/dev/null)
check_match "one WARNING from the session that overflowed" "$warnings" \
    '^WARNING:  rate limit statistics are full: limit "l11" is counted in the overflow row'
check "and only one" "$(grep -c WARNING <<<"$warnings")" 1
check "10 limits have rows" "$(q -c 'SELECT count(*) FROM rate_limit_stats WHERE limit_name IS NOT NULL')" 10
check "the overflow row (limit_name NULL) counts the other 2" \
    "$(q -c "SELECT concat_ws('|', requests, allowed) FROM rate_limit_stats WHERE limit_name IS NULL")" "2|2"
check "the overflow row shows in every database" \
    "$(q -d other -c 'SELECT requests FROM rate_limit_stats WHERE limit_name IS NULL')" 2
q -c 'SELECT rate_limit_stats_reset()' >/dev/null
sleep 1.2
q -c "SELECT count(*) FROM generate_series(11, 12) AS i, rate_limit_request('k', 'l' || i)" >/dev/null
check "after a reset of all: the overflow row is gone, the freed rows are reused" \
    "$(q -c "SELECT string_agg(coalesce(limit_name, 'NULL') || '=' || requests, ',' ORDER BY limit_name) FROM rate_limit_stats")" \
    "l11=1,l12=1"

# ==== 4. A backend killed with kill -9 ======================================================================
log "4. kill -9 of a backend"
# A session that counted (it remembers its entry) is killed while it sleeps; the postmaster then
# reinitializes shared memory.
q -c "SELECT rate_limit_request('s', 'hot')" -c "SELECT pg_sleep(60)" >/dev/null 2>&1 &
sleeper=$!
victim=
for _ in $(seq 100); do
    victim=$(q -c "SELECT pid FROM pg_stat_activity WHERE query = 'SELECT pg_sleep(60)'")
    [ -n "$victim" ] && break
    sleep 0.1
done
"${RUN_AS_SERVER[@]}" kill -9 "$victim"
wait "$sleeper" || true
for _ in $(seq 60); do q -c 'SELECT 1' >/dev/null 2>&1 && break; sleep 1; done
check "after the server's crash restart the counters start over" "$(q -c 'SELECT count(*) FROM rate_limit_stats')" 0
q -c "SELECT rate_limit_request('s', 'hot')" -c "SELECT rate_limit_request('s', 'hot')" >/dev/null
check "and count again" "$(counts hot | cut -d'|' -f1)" 2

# ==== 5. Without shared_preload_libraries =================================================================
log "5. without shared_preload_libraries"
cluster_stop stats
cluster_start stats "${COMMON[@]}"
check "requests work" "$(q -c "SELECT (rate_limit_request('n', 'hot')).allowed")" t
check "pg_ratelimit.stats can be shown" "$(q -c "SELECT (rate_limit_request('n', 'hot')).allowed" -c 'SHOW pg_ratelimit.stats')" \
    "$(printf 't\non')"
check "the view: 55000 with a hint naming shared_preload_libraries" \
    "$(error_of 'SELECT * FROM rate_limit_stats' | cut -d'|' -f1,2)" \
    "55000|rate limit statistics need pg_ratelimit in shared_preload_libraries"
check_match "... and the hint" "$(error_of 'SELECT * FROM rate_limit_stats' | cut -d'|' -f3)" 'shared_preload_libraries'
check "the reset: 55000" "$(error_of "SELECT rate_limit_stats_reset('hot')" | cut -d'|' -f1)" 55000
check "the reset of all: 55000" "$(error_of 'SELECT rate_limit_stats_reset()' | cut -d'|' -f1)" 55000
cluster_stop stats

echo
if [ "$FAILURES" -gt 0 ]; then echo "statistics: $FAILURES of $CASES checks FAILED"; else echo "statistics: all $CASES checks passed"; fi
echo "cases: $CASES"
[ "$FAILURES" -eq 0 ]
