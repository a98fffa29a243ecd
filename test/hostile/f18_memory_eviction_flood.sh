#!/usr/bin/env bash
# Finding 18 (medium-high, availability/abuse): any login role, with nothing but the default EXECUTE that
# PUBLIC has on rate_limit_request_many, resets every memory key of every limit (and, with f17, of every
# database) in one statement of well under a second: a batch of distinct keys on ANY memory limit with a
# long period fills the shared table, and inserting into a full partition evicts the least recently used
# entries that are not back at full capacity (core/memory_table.hpp MemoryTable::insert -> evict; the
# table is one pool shared by all limits, memory_state.cpp table_shape). The victims' keys start over at
# full capacity: a login throttle keyed by account or address is lifted at will. The WARNING goes to the
# attacker's session. (2 x the table's capacity keys; 57,344 keys took 0.19 s at memory_keys = 20000.)
# Expected: a flood through one limit cannot evict another limit's consumption (e.g. a per-limit quota,
# or new keys refused rather than consumption forgotten).
# Resolution: LRU eviction is the documented default (the issue's policy; counted and warned about);
# pg_ratelimit.memory_eviction = none makes the table refuse new keys instead (53400). This script
# checks both.
# Needs the server started with shared_preload_libraries = 'pg_ratelimit'.
source "$(dirname "$0")/lib.sh"
setup_review review_f18_attacker

units() { q -c "SELECT d.remaining + d.allowed::int FROM rate_limit_check('$1', '$2') AS d"; }
q -c "SELECT rate_limit_define('login', 3, '1 hour', storage => 'memory')" \
  -c "SELECT rate_limit_define('search', 100, '1 day', storage => 'memory')" >/dev/null || exit 2
q -c "SELECT count(*) FROM rate_limit_request_many(array_fill('alice'::text, ARRAY[3]), 'login')" >/dev/null
[ "$(units alice login)" = 0 ] || { echo "setup did not exhaust the victim's key"; exit 2; }
capacity=$(q -c "SELECT capacity FROM rate_limit_memory_usage()")
keys=$((capacity * 2))
echo "victim alice on 'login': 0 units left; table capacity $capacity entries; attacker sends $keys keys on 'search'"

flood() {  # the attacker's statement; prints its result or its SQLSTATE
    psql -X -q -At -d "$REVIEW_DB" -U review_f18_attacker -v VERBOSITY=sqlstate -c \
        "SELECT count(*) FROM rate_limit_request_many(ARRAY(SELECT '$1' || g FROM generate_series(1, $keys) g), 'search')" 2>&1 |
        grep -v '^WARNING' | head -n 1
}
# The default, pg_ratelimit.memory_eviction = lru, forgets the least recently used keys, as documented
# (README, Storage modes): the eviction is counted and reported, never silent.
out=$(flood lru)
after=$(units alice login)
echo "memory_eviction = lru: attacker's statement: $out; victim afterwards: $after units;" \
    "$(q -c "SELECT 'evicted_not_full=' || evicted_not_full FROM rate_limit_memory_usage()")"
counted=$(q -c "SELECT evicted_not_full > 0 FROM rate_limit_memory_usage()")
[ "$counted" = t ] || reproduced "keys were forgotten without being counted in rate_limit_memory_usage"
# The mitigation for servers where untrusted roles may call rate_limit_request: memory_eviction = none
# forgets only keys back at full capacity; a new key finding no room is an error (53400).
q -c "SELECT rate_limit_drop('search')" -c "SELECT rate_limit_define('search', 100, '1 day', storage => 'memory')" \
  -c "SELECT rate_limit_reset('alice', 'login')" >/dev/null
q -c "SELECT count(*) FROM rate_limit_request_many(array_fill('alice'::text, ARRAY[3]), 'login')" >/dev/null
q -c "ALTER SYSTEM SET pg_ratelimit.memory_eviction = none" -c "SELECT pg_reload_conf()" >/dev/null
sleep 1
start=$(date +%s%N)
out=$(flood none)
elapsed_ms=$((($(date +%s%N) - start) / 1000000))
after=$(units alice login)
q -c "ALTER SYSTEM RESET pg_ratelimit.memory_eviction" -c "SELECT pg_reload_conf()" >/dev/null
# The flood's entries would stay in the server's table: drop the limit.
q -c "SELECT rate_limit_drop('search')" >/dev/null
echo "memory_eviction = none: attacker's statement (${elapsed_ms} ms): $out; victim afterwards: $after units"
[[ "$out" == *53400* ]] || reproduced "with memory_eviction = none the flood did not fail with 53400 (got: $out)"
[ "$after" != 0 ] && reproduced "with memory_eviction = none an ordinary role's batch on another limit evicted the victim's exhausted key ($after of 3 units again)"
holds "with memory_eviction = none a flood of keys cannot make the table forget another key's consumption; with lru (the default) it is counted"
