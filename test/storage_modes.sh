#!/usr/bin/env bash
# Storage modes against real servers, on clusters of its own (scripts/common.sh): what pg_regress
# (sql/storage_modes.sql) cannot show from one session of one server.
#
# 1. Hot standby: a primary and a streaming standby made with pg_basebackup -R, both with the library
#    preloaded. On the standby, memory limits decide exactly and keep counts of their own; durable and
#    unlogged limits refuse to consume (25006) while rate_limit_check reads the replicated durable state;
#    rate_limit_request_many works; a redefinition on the primary reaches the standby once replayed, in
#    new sessions and in a session that had the limit cached; a limit dropped and defined again on the
#    primary starts over on the standby too.
# 2. A clean restart keeps memory state (saved to pg_stat/pg_ratelimit_memory.state, unlinked once loaded).
# 3. A crash forgets it: kill -9 of a backend (the postmaster reinitializes) and pg_ctl stop -m immediate
#    bring memory keys back to full and empty the unlogged table; durable rows stay.
# 4. Eviction with pg_ratelimit.memory_keys = 1000: least recently used first, exactly; one WARNING per
#    session and minute; entries back at full capacity are evicted before any other.
# 5. Without shared_preload_libraries: memory limits raise 55000 with a hint, the other modes work.
# 6. pgbench, 8 clients on one memory key (1 and 4 shards, autocommit and READ ONLY transactions): exactly
#    the allowance is admitted, counted from the server log (RAISE LOG in a wrapper function).
#
# Every check prints "ok: ..." or "FAILED: ..."; ends with "cases: N"; exits 1 if any check failed.
# ACCESS_PATH (direct or sql, default direct) sets pg_ratelimit.access_path (durable and unlogged limits).
set -euo pipefail
# shellcheck source-path=SCRIPTDIR source=../scripts/common.sh
source "$(dirname "$0")/../scripts/common.sh"

ensure_packages "${PACKAGES[@]}"
# shellcheck disable=SC2119  # no extra make arguments
build_and_install_extension
COMMON=(-c pg_ratelimit.access_path="${ACCESS_PATH:-direct}")
PRELOAD=(-c shared_preload_libraries=pg_ratelimit)

CASES=0
FAILURES=0
pass() { CASES=$((CASES + 1)); echo "ok: $*"; }
fail() { CASES=$((CASES + 1)); FAILURES=$((FAILURES + 1)); echo "FAILED: $*"; }
# check WHAT ACTUAL EXPECTED
check() {
    if [ "$2" = "$3" ]; then pass "$1 ($2)"; else fail "$1: expected '$3', got '$2'"; fi
}
# check_match WHAT ACTUAL REGEX
check_match() {
    if [[ "$2" =~ $3 ]]; then pass "$1 ($2)"; else fail "$1: expected to match /$3/, got '$2'"; fi
}

# q CLUSTER [psql arguments...]: psql on CLUSTER, unaligned, stopping at the first error; SQL from -c or stdin.
q() {
    local cluster=$1
    shift
    PGHOST=$(cluster_dir "$cluster") PGPORT=5432 PGUSER=postgres PGDATABASE=postgres \
        psql -X -At -q -v ON_ERROR_STOP=1 "$@"
}

# error_of CLUSTER SQL: "SQLSTATE|message|hint" of the error SQL raises, or "no error".
error_of() {
    local out
    if out=$(q "$1" -v VERBOSITY=verbose -c "$2" 2>&1 >/dev/null); then
        echo "no error"
        return 0
    fi
    local state message hint
    state=$(sed -n 's/^ERROR:  \([0-9A-Z]\{5\}\): .*/\1/p' <<<"$out" | head -n 1)
    message=$(sed -n 's/^ERROR:  [0-9A-Z]\{5\}: //p' <<<"$out" | head -n 1)
    hint=$(sed -n 's/^HINT:  //p' <<<"$out" | head -n 1)
    echo "$state|$message|$hint"
}

# The memory row of rate_limit_storage: entries|capacity|evicted_full|evicted_not_full.
memory_usage() {
    q "$1" -c "SELECT entries || '|' || capacity || '|' || evicted_full || '|' || evicted_not_full
                 FROM rate_limit_storage WHERE storage = 'memory'"
}

# units_left(key, limit): the whole units a key holds now. rate_limit_check answers for a request of one
# unit: its remaining is what would be left after it when allowed, and what is left when denied.
UNITS_LEFT="CREATE FUNCTION units_left(key text, lim text) RETURNS bigint LANGUAGE sql
            AS \$\$ SELECT d.remaining + d.allowed::int FROM rate_limit_check(key, lim) AS d \$\$"
# remaining CLUSTER KEY LIMIT [SET statements]: units_left.
remaining() {
    q "$1" <<SQL
${4:-}
SELECT units_left('$2', '$3');
SQL
}

# ==== 1. A hot standby ===================================================================================
log "1. hot standby"
cluster_init primary
cluster_start primary "${COMMON[@]}" "${PRELOAD[@]}" -c wal_level=replica -c max_wal_senders=4 -c hot_standby=on
q primary <<SQL >/dev/null
CREATE EXTENSION pg_ratelimit;
$UNITS_LEFT;
SELECT rate_limit_define('m_sb', 5, '1000 days', storage => 'memory');
SELECT rate_limit_define('m_drop', 5, '1000 days', storage => 'memory');
SELECT rate_limit_define('d_sb', 5, '1000 days', storage => 'durable');
SELECT rate_limit_define('u_sb', 5, '1000 days', storage => 'unlogged');
SELECT rate_limit_request('p', 'd_sb', 2);
SQL

# The standby: a base backup of the primary (initdb's pg_hba.conf trusts local replication connections),
# with the standby.signal and primary_conninfo that -R writes.
STANDBY_DIR=$(cluster_dir standby)
mkdir -p "$STANDBY_DIR"
chmod 755 "$STANDBY_DIR"
[ "$(id -u)" -eq 0 ] && chown postgres: "$STANDBY_DIR"
"${RUN_AS_SERVER[@]}" "$PG_BIN/pg_basebackup" -h "$(cluster_dir primary)" -p 5432 -U postgres \
    -D "$STANDBY_DIR/data" -R -X stream -c fast >"$STANDBY_DIR/basebackup.log" 2>&1 ||
    { cat "$STANDBY_DIR/basebackup.log"; die "pg_basebackup failed"; }
cluster_start standby "${COMMON[@]}" "${PRELOAD[@]}" -c hot_standby=on

# Waits until the standby has replayed everything the primary has written so far.
wait_replay() {
    local lsn deadline=$((SECONDS + 60))
    lsn=$(q primary -c "SELECT pg_current_wal_lsn()")
    until [ "$(q standby -c "SELECT coalesce(pg_last_wal_replay_lsn() >= '$lsn'::pg_lsn, false)")" = t ]; do
        [ "$SECONDS" -lt "$deadline" ] || { fail "the standby did not replay up to $lsn within 60 s"; return 1; }
        sleep 0.1
    done
}
wait_replay
check "standby: in recovery, hot" "$(q standby -c "SELECT pg_is_in_recovery() || ',' || current_setting('transaction_read_only')")" "true,on"
check "standby: streams from the primary" "$(q primary -c "SELECT count(*) FROM pg_stat_replication WHERE state = 'streaming'")" 1

check "standby: memory limit, 7 requests on a key of 5 (allowed:remaining)" \
    "$(q standby -c "SELECT string_agg((d).allowed || ':' || (d).remaining, ',' ORDER BY g)
                       FROM (SELECT g, rate_limit_request('k', 'm_sb') AS d FROM generate_series(1, 7) AS g OFFSET 0) AS s")" \
    "true:4,true:3,true:2,true:1,true:0,false:0,false:0"
check "standby: denied again from a new session" "$(q standby -c "SELECT (rate_limit_request('k', 'm_sb')).allowed")" f
check "primary: its own count of the key the standby used up is untouched" "$(remaining primary k m_sb)" 5
q primary -c "SELECT rate_limit_request('k', 'm_sb', 2), rate_limit_request('pk', 'm_sb', 3)" >/dev/null
check "primary: its own requests count on the primary" "$(remaining primary k m_sb),$(remaining primary pk m_sb)" "3,2"
check "standby: the primary's requests do not count on the standby" "$(remaining standby k m_sb),$(remaining standby pk m_sb)" "0,5"

check_match "standby: rate_limit_request on a durable limit is refused" \
    "$(error_of standby "SELECT rate_limit_request('k', 'd_sb')")" '^25006\|[^|]*read-only[^|]*\|'
check_match "standby: rate_limit_request on an unlogged limit is refused" \
    "$(error_of standby "SELECT rate_limit_request('k', 'u_sb')")" '^25006\|unlogged rate limits cannot be used on a standby\|'
check_match "standby: rate_limit_request_many on a durable limit is refused" \
    "$(error_of standby "SELECT * FROM rate_limit_request_many(ARRAY['k'], 'd_sb')")" '^25006\|'
check_match "standby: rate_limit_check on an unlogged limit fails cleanly (not an internal error)" \
    "$(error_of standby "SELECT rate_limit_check('k', 'u_sb')")" '^25006\|unlogged rate limits cannot be used on a standby\|'
check "standby: rate_limit_check reads the replicated durable state (2 of 5 used on the primary)" \
    "$(remaining standby p d_sb)" 3
check "standby: rate_limit_check of a durable key without a row" "$(remaining standby nobody d_sb)" 5

check "standby: rate_limit_request_many on a memory limit (key:allowed:remaining)" \
    "$(q standby -c "SELECT string_agg(key || ':' || allowed || ':' || remaining, ',' ORDER BY position)
                       FROM rate_limit_request_many(ARRAY['a', 'b', 'a', 'a', 'a', 'a', 'a'], 'm_sb')")" \
    "a:true:4,b:true:4,a:true:3,a:true:2,a:true:1,a:true:0,a:false:0"
check "primary: the standby's batch left the primary's keys alone" "$(remaining primary a m_sb),$(remaining primary b m_sb)" "5,5"

# A session on the standby that has the limit cached, kept open across the redefinition.
coproc STANDBY_SESSION {
    PGHOST=$STANDBY_DIR PGPORT=5432 PGUSER=postgres PGDATABASE=postgres exec psql -X -At -q 2>&1
}
# Bash unsets STANDBY_SESSION_PID as soon as it reaps the coprocess, which can be before `wait` runs.
standby_session_pid=$STANDBY_SESSION_PID
session() {
    local line out=
    printf '%s\n\\echo __end__\n' "$1" >&"${STANDBY_SESSION[1]}"
    while IFS= read -r -t 60 line <&"${STANDBY_SESSION[0]}"; do
        [ "$line" = __end__ ] && break
        out+=$line$'\n'
    done
    printf '%s' "${out%$'\n'}"
}
session_pid=$(session "SELECT pg_backend_pid();")
check "standby session: the limit cached, the key used up" "$(session "SELECT units_left('k', 'm_sb');")" 0
# A durable twin on the primary, used up as 'k' is on the standby, redefined alike: what the kept state
# gives under the new rate.
q primary <<'SQL' >/dev/null
SELECT rate_limit_define('d_twin', 5, '1000 days', storage => 'durable');
SELECT rate_limit_request('k', 'd_twin', 5);
SELECT rate_limit_define('m_sb', 20, '1000 days', storage => 'memory');
SELECT rate_limit_define('d_twin', 20, '1000 days', storage => 'durable');
SQL
wait_replay
check "standby: the new definition replayed" "$(q standby -c "SELECT rate || '/' || capacity FROM rate_limit_config WHERE name = 'm_sb'")" "20/20"
check "standby, new session: a fresh key has the new capacity" "$(remaining standby fresh m_sb)" 20
twin=$(remaining primary k d_twin)
check "standby, new session: the used-up key keeps its state under the new rate (as the durable twin on the primary)" \
    "$(remaining standby k m_sb)" "$twin"
check "standby, cached session: a fresh key has the new capacity" \
    "$(session "SELECT units_left('fresh2', 'm_sb');")" 20
check "standby, cached session: the used-up key as the durable twin" \
    "$(session "SELECT units_left('k', 'm_sb');")" "$twin"
# (The coprocess's descriptors exist in command substitutions, not in pipelines: no pipe here.)
check "standby, cached session: 21 requests on a fresh key, the 21st denied (admitted/denied)" \
    "$(session "SELECT count(*) FILTER (WHERE allowed) || '/' || count(*) FILTER (WHERE NOT allowed)
                  FROM (SELECT (rate_limit_request('f3', 'm_sb')).allowed FROM generate_series(1, 21) OFFSET 0) AS s;")" "20/1"
check "standby session: the same backend throughout" "$(session "SELECT pg_backend_pid();")" "$session_pid"
printf '\\q\n' >&"${STANDBY_SESSION[1]}"
wait "$standby_session_pid" 2>/dev/null || true

# A limit dropped and defined again on the primary starts over there (its entries are forgotten at
# commit); the standby must not keep enforcing the old limit's consumption either.
q standby -c "SELECT rate_limit_request('k', 'm_drop', 4)" >/dev/null
q primary -c "SELECT rate_limit_request('k', 'm_drop', 4)" >/dev/null
q primary <<'SQL' >/dev/null
SELECT rate_limit_drop('m_drop');
SELECT rate_limit_define('m_drop', 5, '1000 days', storage => 'memory');
SQL
wait_replay
check "primary: a key of a dropped and defined again memory limit starts over" "$(remaining primary k m_drop)" 5
check "standby: a key of a memory limit dropped and defined again on the primary starts over" \
    "$(remaining standby k m_drop)" 5
check "no server process crashed (primary, standby)" \
    "$(cat "$(cluster_dir primary)/server.log" "$STANDBY_DIR/server.log" | grep -c 'terminated by signal' || true)" 0
cluster_stop standby
cluster_stop primary

# ==== 2. A clean restart keeps memory state ==============================================================
log "2. clean restart"
LIFE_DIR=$(cluster_dir life)
SAVE_FILE=$LIFE_DIR/data/pg_stat/pg_ratelimit_memory.state
cluster_init life
cluster_start life "${COMMON[@]}" "${PRELOAD[@]}"
# The clock frozen in the future (entries are restored only if not yet full by the real clock).
FROZEN="SET pg_ratelimit.fake_now = '2030-01-01 00:00:00+00';"
q life <<SQL >/dev/null
CREATE EXTENSION pg_ratelimit;
$UNITS_LEFT;
$FROZEN
SELECT rate_limit_define('mem', 10, '1 hour', storage => 'memory');
SELECT rate_limit_define('mem_sh', 40, '1 hour', shards => 4, storage => 'memory');
SELECT rate_limit_define('mem_fw', 10, '1 hour', algorithm => 'fixed_window', storage => 'memory');
SELECT rate_limit_define('unl', 10, '1 hour', storage => 'unlogged');
SELECT rate_limit_define('dur', 10, '1 hour', storage => 'durable');
SELECT rate_limit_request('k', name, 4) FROM unnest(ARRAY['mem', 'mem_fw', 'unl', 'dur']) AS name;
SELECT rate_limit_request('k', 'mem_sh') FROM generate_series(1, 10);
SELECT rate_limit_request('k' || g, 'mem') FROM generate_series(1, 20) AS g;
SQL
all_remaining() {
    q life <<SQL
$FROZEN
SELECT string_agg(name || '=' || units_left('k', name), ',' ORDER BY name)
  FROM unnest(ARRAY['mem', 'mem_sh', 'mem_fw', 'unl', 'dur']) AS name;
SELECT sum(units_left('k' || g, 'mem')) FROM generate_series(1, 20) AS g;
SQL
}
all_remaining_line() { all_remaining | tr '\n' ' '; }
before=$(all_remaining_line)
entries_before=$(memory_usage life | cut -d '|' -f 1)
check "before the restart: consumption" "$before" "dur=6,mem=6,mem_fw=6,mem_sh=30,unl=6 180 "
check "before the restart: memory entries (1 + 4 shards + 1 + 20 keys, at most 4 shards used)" \
    "$([ "$entries_before" -ge 23 ] && [ "$entries_before" -le 26 ] && echo in-range || echo "$entries_before")" in-range
cluster_stop life fast
check "after pg_ctl stop -m fast: the save file exists" "$([ -f "$SAVE_FILE" ] && echo yes || echo no)" yes
cluster_start life "${COMMON[@]}" "${PRELOAD[@]}"
check "after the restart: every key's remaining unchanged" "$(all_remaining_line)" "$before"
check "after the restart: rate_limit_storage shows the same memory entries" "$(memory_usage life | cut -d '|' -f 1)" "$entries_before"
check "after the restart: the save file is gone (unlinked once loaded)" "$([ -e "$SAVE_FILE" ] && echo present || echo gone)" gone
check "after the restart: requests go on from the kept state" \
    "$(q life -c "$FROZEN" -c "SELECT string_agg((rate_limit_request('k', 'mem')).allowed::text, ',') FROM generate_series(1, 7)")" \
    "true,true,true,true,true,true,false"
# A second clean restart saves what the first one loaded, and the consumption since.
cluster_stop life fast
cluster_start life "${COMMON[@]}" "${PRELOAD[@]}"
check "after a second clean restart: the key stays used up" "$(remaining life k mem "$FROZEN")" 0

# ==== 3. A crash forgets memory state ====================================================================
log "3. crash"
crash_state() {
    q life <<SQL
$FROZEN
SELECT string_agg(name || '=' || units_left('k', name), ',' ORDER BY name)
  FROM unnest(ARRAY['mem', 'mem_sh', 'unl', 'dur']) AS name;
SELECT 'unlogged rows=' || count(*) FROM rate_limit_state_unlogged;
SQL
}
consume() {
    q life -c "$FROZEN" -c "SELECT rate_limit_request('k', name, 4) FROM unnest(ARRAY['mem', 'mem_sh', 'unl', 'dur']) AS name" >/dev/null
}
ready_count() { grep -c 'database system is ready to accept connections' "$LIFE_DIR/server.log" || true; }

# a) kill -9 of a backend: the postmaster kills the others and reinitializes shared memory.
consume
check "before the backend crash: consumption" "$(crash_state | tr '\n' ' ')" "dur=2,mem=0,mem_sh=26,unl=2 unlogged rows=1 "
postmaster_before=$(cluster_pid life)
ready_before=$(ready_count)
q life -c "SELECT pg_sleep(300)" >/dev/null 2>&1 &
sleeper=$!
backend=
for _ in $(seq 1 100); do
    backend=$(q life -c "SELECT pid FROM pg_stat_activity WHERE query = 'SELECT pg_sleep(300)'")
    [ -n "$backend" ] && break
    sleep 0.1
done
[ -n "$backend" ] || die "the sleeping backend did not show up"
kill -9 "$backend"
wait "$sleeper" || true
deadline=$((SECONDS + 60))
until [ "$(ready_count)" -gt "$ready_before" ] && "$PG_BIN/pg_isready" -q -h "$LIFE_DIR" -p 5432; do
    [ "$SECONDS" -lt "$deadline" ] || die "the server did not come back from the backend's crash"
    sleep 0.1
done
check_match "the server log shows the crash and the reinitialization" \
    "$(grep -o 'all server processes terminated; reinitializing' "$LIFE_DIR/server.log" | head -n 1)" 'reinitializing'
check "the postmaster survived (same pid)" "$(cluster_pid life)" "$postmaster_before"
check "after the backend crash: memory keys full, unlogged table emptied, durable kept" \
    "$(crash_state | tr '\n' ' ')" "dur=2,mem=10,mem_sh=40,unl=10 unlogged rows=0 "
check "after the backend crash: no memory entries" "$(memory_usage life | cut -d '|' -f 1)" 0

# b) pg_ctl stop -m immediate: nothing saved, nothing loaded.
consume
check "before the immediate stop: consumption" "$(crash_state | tr '\n' ' ')" "dur=2,mem=6,mem_sh=36,unl=6 unlogged rows=1 "
cluster_stop life immediate
check "after pg_ctl stop -m immediate: no save file" "$([ -e "$SAVE_FILE" ] && echo present || echo absent)" absent
cluster_start life "${COMMON[@]}" "${PRELOAD[@]}"
check "after the immediate stop: memory keys full, unlogged table emptied, durable kept" \
    "$(crash_state | tr '\n' ' ')" "dur=2,mem=10,mem_sh=40,unl=10 unlogged rows=0 "
check "after the immediate stop: no memory entries" "$(memory_usage life | cut -d '|' -f 1)" 0

# ==== 6. pgbench on one memory key (on the same cluster) =================================================
log "6. pgbench, 8 clients on one memory key"
q life <<'SQL' >/dev/null
SELECT rate_limit_define('pb1', 500, '1000 days', storage => 'memory');
SELECT rate_limit_define('pb4', 500, '1000 days', shards => 4, storage => 'memory');
-- Each decision goes to the server log, outside any transaction: the count of admissions is exact even in
-- read-only transactions, where nothing can be written.
CREATE FUNCTION pb_request(key text, lim text) RETURNS boolean LANGUAGE plpgsql AS $$
DECLARE
    ok boolean := (rate_limit_request(key, lim)).allowed;
BEGIN
    IF ok THEN RAISE LOG 'pb-admitted %', key; ELSE RAISE LOG 'pb-denied %', key; END IF;
    RETURN ok;
END $$;
SQL
PB_WORK=$RUN_DIR/pgbench
mkdir -p "$PB_WORK"
chmod 755 "$PB_WORK"
for lim in pb1 pb4; do
    for mode in auto ro; do
        key=$lim-$mode
        script=$PB_WORK/$key.sql
        if [ "$mode" = ro ]; then
            printf "BEGIN READ ONLY;\nSELECT pb_request('%s', '%s');\nCOMMIT;\n" "$key" "$lim" >"$script"
        else
            printf "SELECT pb_request('%s', '%s');\n" "$key" "$lim" >"$script"
        fi
        out=$(PGHOST=$LIFE_DIR PGPORT=5432 PGUSER=postgres "$PG_BIN/pgbench" -n -c 8 -j 2 -t 100 -f "$script" postgres 2>&1) ||
            { echo "$out"; fail "$key: pgbench failed"; continue; }
        processed=$(sed -n 's/^number of transactions actually processed: \([0-9]*\).*/\1/p' <<<"$out")
        admitted=$(grep -c "LOG:  pb-admitted $key\$" "$LIFE_DIR/server.log" || true)
        denied=$(grep -c "LOG:  pb-denied $key\$" "$LIFE_DIR/server.log" || true)
        check "$key: pgbench, 8 clients x 100 transactions, all processed" "$processed" 800
        check "$key: admitted exactly the allowance (500), the rest denied (server log)" "$admitted/$denied" "500/300"
        check "$key: rate_limit_check afterwards" "$(remaining life "$key" "$lim")" 0
    done
done
cluster_stop life

# ==== 4. Eviction ========================================================================================
log "4. eviction, pg_ratelimit.memory_keys = 1000"
cluster_init evict
cluster_start evict "${COMMON[@]}" "${PRELOAD[@]}" -c pg_ratelimit.memory_keys=1000
q evict -c "CREATE EXTENSION pg_ratelimit" -c "$UNITS_LEFT" -c "SELECT rate_limit_define('ev', 10, '1000 days', storage => 'memory')" >/dev/null
capacity=$(memory_usage evict | cut -d '|' -f 2)
check_match "capacity for 1000 keys" "$capacity" '^(1[0-9]{3})$'
# 5000 keys, one unit each, in one session, the clock a millisecond further at each: last_used orders them.
warnings=$(q evict 2>&1 >/dev/null <<'SQL'
DO $$
BEGIN
    FOR i IN 1..5000 LOOP
        PERFORM set_config('pg_ratelimit.fake_now', (timestamptz '2030-01-01 00:00:00+00' + i * interval '1 ms')::text, false);
        PERFORM rate_limit_request('key' || i, 'ev');
    END LOOP;
END $$;
SQL
)
IFS='|' read -r entries capacity evicted_full evicted_not_full <<<"$(memory_usage evict)"
check "5000 keys: entries within capacity" "$([ "$entries" -le "$capacity" ] && [ "$entries" -gt 0 ] && echo yes || echo "$entries > $capacity")" yes
check "5000 keys: every key is either held or evicted (entries + evicted_not_full)" $((entries + evicted_not_full)) 5000
check "5000 keys: none was full, so none evicted as full" "$evicted_full" 0
check "one WARNING in the session, however many evictions" \
    "$(grep -c 'WARNING:  pg_ratelimit: the memory state table is full' <<<"$warnings" || true)" 1
check_match "the WARNING's hint names pg_ratelimit.memory_keys" "$(grep -m 1 '^HINT' <<<"$warnings")" 'pg_ratelimit.memory_keys \(currently 1000\)'
# Exactly the most recently used keys are held, each with its unit consumed; the others start over.
check "the $entries most recently used keys kept their count (remaining 9), the older start over (10)" \
    "$(q evict <<SQL
SET pg_ratelimit.fake_now = '2030-01-01 00:00:06+00';
SELECT count(*) FILTER (WHERE g > 5000 - $entries AND r = 9) || '/' || count(*) FILTER (WHERE g <= 5000 - $entries AND r = 10)
  FROM generate_series(1, 5000) AS g, LATERAL (SELECT units_left('key' || g, 'ev') AS r) AS c;
SQL
)" "$entries/$((5000 - entries))"
check "a new session warns again (once)" \
    "$(q evict -c "SELECT count(rate_limit_request('more' || g, 'ev')) FROM generate_series(1, 500) AS g" 2>&1 >/dev/null |
        grep -c 'WARNING:  pg_ratelimit: the memory state table is full' || true)" 1

# Full entries go first: 1500 keys used at T, back at full capacity an hour later, when 1000 new keys come.
q evict -c "SELECT rate_limit_drop('ev')" -c "SELECT rate_limit_define('fl', 10, '1 minute', storage => 'memory')" >/dev/null
check "dropping the limit removed its entries" "$(memory_usage evict | cut -d '|' -f 1)" 0
q evict >/dev/null <<'SQL'
DO $$
BEGIN
    FOR i IN 1..1500 LOOP
        PERFORM set_config('pg_ratelimit.fake_now', (timestamptz '2030-02-01 00:00:00+00' + i * interval '1 ms')::text, false);
        PERFORM rate_limit_request('old' || i, 'fl');
    END LOOP;
END $$;
SQL
IFS='|' read -r entries _ full_before not_full_before <<<"$(memory_usage evict)"
check "1500 keys held" "$entries" 1500
new_warnings=$(q evict 2>&1 >/dev/null <<'SQL'
DO $$
BEGIN
    FOR i IN 1..1000 LOOP
        PERFORM set_config('pg_ratelimit.fake_now', (timestamptz '2030-02-01 01:00:00+00' + i * interval '1 ms')::text, false);
        PERFORM rate_limit_request('new' || i, 'fl');
    END LOOP;
END $$;
SQL
)
IFS='|' read -r entries _ full_after not_full_after <<<"$(memory_usage evict)"
check "full keys evicted first: evicted_full grew by the 1500 full keys" $((full_after - full_before)) 1500
check "full keys evicted first: evicted_not_full did not grow" $((not_full_after - not_full_before)) 0
check "full keys evicted first: only the new keys are held" "$entries" 1000
check "full keys evicted first: no WARNING (nothing was lost)" "$(grep -c WARNING <<<"$new_warnings" || true)" 0
check "every new key kept its count" \
    "$(q evict -c "SET pg_ratelimit.fake_now = '2030-02-01 01:00:01+00'" \
        -c "SELECT count(*) FROM generate_series(1, 1000) AS g WHERE units_left('new' || g, 'fl') = 9")" 1000
check "no server process crashed (eviction)" "$(grep -c 'terminated by signal' "$(cluster_dir evict)/server.log" || true)" 0
cluster_stop evict

# ==== 5. Without shared_preload_libraries ================================================================
log "5. without shared_preload_libraries"
cluster_init plain
cluster_start plain "${COMMON[@]}"
check "CREATE EXTENSION works without preloading" "$(error_of plain "CREATE EXTENSION pg_ratelimit")" "no error"
define_error=$(error_of plain "SELECT rate_limit_define('mm', 5, '1 hour', storage => 'memory')")
check_match "defining a memory limit: 55000" "$define_error" '^55000\|'
check_match "defining a memory limit: the hint names shared_preload_libraries" "$define_error" '\|[^|]*shared_preload_libraries[^|]*$'
check "the failed definition left no row" "$(q plain -c "SELECT count(*) FROM rate_limit_config WHERE name = 'mm'")" 0
# A memory row put in the table directly (as a restore from a preloaded server would): using it fails alike.
q plain -c "INSERT INTO rate_limit_config (name, algorithm, rate, period, capacity, storage)
            VALUES ('mm_raw', 'token_bucket', 5, '1 hour', 5, 'memory')" >/dev/null
check_match "rate_limit_request on a memory limit: 55000" "$(error_of plain "SELECT rate_limit_request('k', 'mm_raw')")" '^55000\|'
check_match "rate_limit_check on a memory limit: 55000" "$(error_of plain "SELECT rate_limit_check('k', 'mm_raw')")" '^55000\|'
q plain <<SQL >/dev/null
$UNITS_LEFT;
SELECT rate_limit_define('d', 5, '1 hour', storage => 'durable');
SELECT rate_limit_define('u', 5, '1 hour', storage => 'unlogged');
SELECT rate_limit_request('k', 'd', 2), rate_limit_request('k', 'u', 3);
SQL
check "durable and unlogged limits work" "$(remaining plain k d),$(remaining plain k u)" "3,2"
check "rate_limit_storage: the memory row with zeros" \
    "$(q plain -c "SELECT concat_ws(',', entries, capacity, bytes, evicted_full, evicted_not_full) FROM rate_limit_storage WHERE storage = 'memory'")" \
    "0,0,0,0,0"
check "rate_limit_storage: durable and unlogged rows" \
    "$(q plain -c "SELECT string_agg(storage || '=' || entries, ',' ORDER BY storage) FROM rate_limit_storage WHERE storage <> 'memory'")" \
    "durable=1,unlogged=1"
cluster_stop plain

echo
if [ "$FAILURES" -gt 0 ]; then echo "storage modes: $FAILURES of $CASES checks FAILED"; else echo "storage modes: all $CASES checks passed"; fi
echo "cases: $CASES"
[ "$FAILURES" -eq 0 ]
