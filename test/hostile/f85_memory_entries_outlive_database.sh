#!/usr/bin/env bash
# Finding 85 (medium, issue 21 item 5): memory entries outlive their database. DROP DATABASE and DROP
# EXTENSION left the database's entries in the server-wide table: nothing removed them, a clean restart
# saved and loaded them again, and under memory_eviction = none another database then got 53400 on 108 of
# 200 new keys (all 200 after a restart).
# Attack: on a cluster of its own (memory_keys = 1000: 1,792 entries, memory_eviction = none), a database
# fills 1,700 entries of a day-long memory limit and is dropped; another database's 200 new keys; the
# same with DROP EXTENSION (and the extension created again: its keys must start full); and a database
# dropped while the library was not preloaded (no hook ran), its entries in the save file, then a start
# with the library: they must not be loaded.
# Expected: the entries go with the database or the extension; no 53400; nothing of a dropped database is
# loaded at start.
here=$(dirname "$0")
source "$here/lib.sh"
source "$here/own_cluster.sh"
own_cluster_start -c pg_ratelimit.memory_keys=1000 -c pg_ratelimit.memory_eviction=none
export PGDATABASE=postgres
p() { psql -X -q -At -v ON_ERROR_STOP=1 "$@"; }
entries() { p -d postgres -c "SELECT entries FROM rate_limit_memory_usage()"; }
fill() {  # fill DB N: the extension, a memory limit, N keys used
    p -d postgres -c "CREATE DATABASE $1" || exit 2
    p -d "$1" -c "CREATE EXTENSION pg_ratelimit" -c "SELECT rate_limit_define('m', 10, '1 day', storage => 'memory')" \
      -c "SELECT count(*) FROM rate_limit_request_many(array(SELECT 'key' || g FROM generate_series(1, $2) g), 'm')" \
      >/dev/null || exit 2
}
new_keys_refused() {  # how many of 200 new keys in another database fail with 53400
    p -d "$1" -c "SELECT rate_limit_define('m', 10, '1 day', storage => 'memory')" >/dev/null || exit 2
    p -d "$1" -c "DO \$\$ DECLARE refused int := 0; BEGIN
        FOR i IN 1..200 LOOP
            BEGIN PERFORM rate_limit_request('other' || i, 'm');
            EXCEPTION WHEN configuration_limit_exceeded THEN refused := refused + 1; END;
        END LOOP;
        RAISE NOTICE 'refused %', refused; END \$\$" 2>&1 | sed -n 's/.*refused \([0-9]*\).*/\1/p'
}
p -c "CREATE EXTENSION pg_ratelimit" || exit 2
p -c "CREATE DATABASE other" -d postgres && p -d other -c "CREATE EXTENSION pg_ratelimit" >/dev/null || exit 2

# DROP DATABASE.
fill gone 1700
with=$(entries)
p -c "DROP DATABASE gone" || exit 2
after_drop=$(entries)
refused=$(new_keys_refused other)
echo "entries: $with with the database, $after_drop after DROP DATABASE; new keys refused in another database: $refused of 200"
[ "$with" -ge 1700 ] || { echo "unexpected setup"; exit 2; }
[ "$after_drop" != 0 ] && reproduced "DROP DATABASE left $after_drop memory entries"
[ "${refused:-x}" != 0 ] && reproduced "another database's new keys got 53400 ($refused of 200)"

# DROP EXTENSION, then CREATE EXTENSION again: the same limit name must not find the old keys.
p -d other -c "SELECT rate_limit_drop('m')" >/dev/null
fill ext 1000
p -d ext -c "DROP EXTENSION pg_ratelimit" || exit 2
after_extension=$(entries)
p -d ext -c "CREATE EXTENSION pg_ratelimit" -c "SELECT rate_limit_define('m', 10, '1 day', storage => 'memory')" >/dev/null
left=$(p -d ext -c "SELECT (rate_limit_check('key1', 'm')).remaining + 1")
echo "entries after DROP EXTENSION: $after_extension; key1 after CREATE EXTENSION again: $left of 10 left"
p -d postgres -c "DROP DATABASE ext" || exit 2

# A database dropped while the library was not preloaded: its saved entries must not come back.
fill unloaded 500
own_cluster_restart   # saves 500 entries, loads them
kept=$(entries)
OWN_OPTIONS="$OWN_OPTIONS -c shared_preload_libraries=''"
own_cluster_restart   # without the library: the save file stays as it is
p -c "DROP DATABASE unloaded" || exit 2
OWN_OPTIONS=${OWN_OPTIONS% -c shared_preload_libraries=\'\'}
own_cluster_restart   # with it again: loads the file
reloaded=$(entries)
logged=$(grep -c 'memory entries of dropped databases were not loaded' "$OWN_DIR/server.log")
echo "entries across a clean restart: $kept; after the database was dropped without the library and a restart: $reloaded (LOG lines: $logged)"

[ "$kept" = 500 ] || { echo "unexpected setup"; exit 2; }
[ "$after_extension" != 0 ] && reproduced "DROP EXTENSION left $after_extension memory entries"
[ "$left" != 10 ] && reproduced "a new extension's limit found the dropped extension's keys ($left of 10 left)"
[ "$reloaded" != 0 ] && reproduced "a dropped database's $reloaded saved entries were loaded at start"
holds "memory entries go with their database and with the extension, and a dropped database's are not loaded"
