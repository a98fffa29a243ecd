#!/usr/bin/env bash
# Finding 17 (high, every server with more than one database using memory limits): the identity of a
# memory entry is (limit name, key, shard) only (access_memory.cpp memory_fetch -> memory_identity), with
# nothing of the database, and a limit is purged by the hash of its name alone (memory_state.cpp
# forget_limit). One shared-memory table serves every database of the server, so databases that use the
# same limit name interfere:
#   a. any role with the default EXECUTE on rate_limit_request, in ANOTHER database whose limit of that
#      name has another epoch, resets a key of this database with one call: its entry is overwritten with
#      the other definition, which this database then reads as absent (full capacity): over-admission;
#   b. rate_limit_drop (or a redefinition) of the limit in another database wipes this database's keys;
#   c. a clone of the database (CREATE DATABASE ... TEMPLATE, pg_dump | psql on the same server) keeps the
#      epochs, so the clone (staging, a tenant's copy) consumes the original's allowance and vice versa.
# Expected: memory state is per database (and per extension schema): none of the three changes a key here.
# Needs the server started with shared_preload_libraries = 'pg_ratelimit'.
source "$(dirname "$0")/lib.sh"
setup_review review_f17_other
OTHER_DB=${REVIEW_DB}_other
CLONE_DB=${REVIEW_DB}_clone
drop_other_databases() {
    wait_for_server || return 0
    psql -X -q -d postgres -c "DROP DATABASE IF EXISTS $OTHER_DB WITH (FORCE)" -c "DROP DATABASE IF EXISTS $CLONE_DB WITH (FORCE)" >/dev/null 2>&1
}
trap 'drop_other_databases; cleanup_review' EXIT
drop_other_databases

# units DB KEY: the whole units the key holds in DB's memory limit 'api' (5 an hour).
units() { psql -X -q -At -d "$1" -c "SELECT d.remaining + d.allowed::int FROM rate_limit_check('$2', 'api') AS d"; }

q -c "SELECT rate_limit_define('api', 5, '1 hour', storage => 'memory')" >/dev/null || exit 2
q -c "SELECT count(*) FROM rate_limit_request_many(array_fill('a'::text, ARRAY[5]) || array_fill('b'::text, ARRAY[5]), 'api')" >/dev/null
# The clone is made now: it holds the same 'api' row, epoch included.
psql -X -q -v ON_ERROR_STOP=1 -d postgres -c "CREATE DATABASE $CLONE_DB TEMPLATE $REVIEW_DB" >/dev/null || exit 2
psql -X -q -v ON_ERROR_STOP=1 -d postgres -c "CREATE DATABASE $OTHER_DB" -c "GRANT CONNECT ON DATABASE $OTHER_DB TO review_f17_other" >/dev/null || exit 2
psql -X -q -v ON_ERROR_STOP=1 -d "$OTHER_DB" -c "CREATE EXTENSION pg_ratelimit" \
    -c "SELECT rate_limit_define('api', 5, '1 hour', storage => 'memory')" >/dev/null || exit 2
echo "here, after 5 requests each: a=$(units "$REVIEW_DB" a) b=$(units "$REVIEW_DB" b)"
[ "$(units "$REVIEW_DB" a)/$(units "$REVIEW_DB" b)" = 0/0 ] || { echo "setup did not exhaust the keys"; exit 2; }

problems=()
# a. One request on key a by an ordinary role of the other database.
psql -X -q -At -d "$OTHER_DB" -U review_f17_other -c "SELECT allowed FROM rate_limit_request('a', 'api')" >/dev/null
after_a=$(units "$REVIEW_DB" a)
echo "a. after one request on 'a' in another database by an ordinary role: here a=$after_a"
[ "$after_a" != 0 ] && problems+=("a request in another database reset key a here ($after_a units again)")

# c. The clone shares the state: 4 requests on a new key there consume it here.
psql -X -q -At -d "$CLONE_DB" -c "SELECT count(*) FROM rate_limit_request_many(array_fill('c'::text, ARRAY[4]), 'api')" >/dev/null
after_c=$(units "$REVIEW_DB" c)
echo "c. after 4 requests on 'c' in a clone of this database: here c=$after_c"
[ "$after_c" != 5 ] && problems+=("a clone's requests consumed key c here ($after_c of 5 units left)")

# b. The other database drops its limit of the same name.
psql -X -q -v ON_ERROR_STOP=1 -d "$OTHER_DB" -c "SELECT rate_limit_drop('api')" >/dev/null || exit 2
after_b=$(units "$REVIEW_DB" b)
echo "b. after rate_limit_drop('api') in another database: here b=$after_b"
[ "$after_b" != 0 ] && problems+=("a drop in another database reset key b here ($after_b units again)")

[ ${#problems[@]} -gt 0 ] && reproduced "memory state is shared by every database of the server: $(IFS=';'; echo "${problems[*]}")"
holds "memory state is per database: another database's requests, drop and a clone leave this one's keys alone"
