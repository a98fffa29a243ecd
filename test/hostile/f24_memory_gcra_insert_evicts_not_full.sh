#!/usr/bin/env bash
# Finding 24 (medium, any login role): a new key of a GCRA memory limit evicts other keys that are NOT
# back at full capacity, even with pg_ratelimit.memory_eviction = none, and the table counts them as
# evicted_full (nothing lost, no WARNING). access_memory.cpp store() takes the decision's time from the
# state it stores (`now = next.ts`) and passes it to MemoryTable::insert, whose eviction drops every entry
# with full_at <= now. For the token bucket and the fixed window next.ts is the clock; for GCRA it is the
# key's theoretical arrival time, up to capacity x period / rate (plus any reservation) in the future.
# So each new GCRA key that lands in a full partition drops every entry of that partition that will be
# full before its TAT: other limits' exhausted keys start over at full capacity. (The same next.ts becomes
# the entry's last_used: GCRA entries look used in the future, sliding-window ones up to a period in the
# past, which skews LRU eviction too.)
# Attack: with memory_eviction = none (the README's setting "where callers are not trusted"), fill the
# table with exhausted keys of a 3-per-hour login limit; then an ordinary role makes requests for new
# keys on a GCRA memory limit of 1 per day.
# Expected: the victims keep their consumption; the new keys that find no room fail with 53400.
# Needs the server started with shared_preload_libraries = 'pg_ratelimit'.
source "$(dirname "$0")/lib.sh"
setup_review review_f24_attacker
memory_eviction_none login quota
q -c "SELECT rate_limit_define('login', 3, '1 hour', storage => 'memory')" \
  -c "SELECT rate_limit_define('quota', 1, '1 day', algorithm => 'gcra', storage => 'memory')" >/dev/null || exit 2
capacity=$(q -c "SELECT capacity FROM rate_limit_memory_usage()")
# Victims: as many login keys as the table takes, in batches of 500 until one stops with 53400 at the first
# full partition (that batch gives back what it took, f76; the batches before it keep theirs).
fill=$(q_any -v VERBOSITY=sqlstate -c "DO \$\$ BEGIN FOR i IN 0..$((capacity * 2 / 500)) LOOP
    PERFORM count(*) FROM rate_limit_request_many(ARRAY(SELECT 'victim' || g FROM generate_series(i * 500 + 1, i * 500 + 500) g), 'login');
END LOOP; END \$\$")
victims() {  # victims whose consumption is still counted (a check of all 3 units is denied)
    q -c "SELECT count(*) FILTER (WHERE NOT (rate_limit_check('victim' || g, 'login', 3)).allowed) FROM generate_series(1, $((capacity * 2))) g"
}
before=$(victims)
full_before=$(q -c "SELECT evicted_full FROM rate_limit_memory_usage()")
echo "table capacity $capacity; filling: $fill; victims holding consumption: $before"
[[ "$fill" == *53400* ]] && [ "$before" -gt 1000 ] || { echo "setup did not fill the table with victims"; exit 2; }

attack=$(PGOPTIONS="-c client_min_messages=warning" psql -X -q -At -d "$REVIEW_DB" -U review_f24_attacker 2>&1 <<'SQL'
DO $$
DECLARE admitted int := 0; refused int := 0;
BEGIN
    FOR i IN 1..300 LOOP
        BEGIN
            IF (rate_limit_request('newcomer' || i, 'quota')).allowed THEN admitted := admitted + 1; END IF;
        EXCEPTION WHEN configuration_limit_exceeded THEN refused := refused + 1;
        END;
    END LOOP;
    RAISE WARNING 'attacker: % new GCRA keys admitted, % refused (53400)', admitted, refused;
END $$;
SQL
)
after=$(victims)
evicted_full=$(( $(q -c "SELECT evicted_full FROM rate_limit_memory_usage()") - full_before ))
echo "$attack"
echo "victims holding consumption afterwards: $after; entries counted as evicted_full meanwhile: $evicted_full"
[ "$after" -lt "$before" ] &&
    reproduced "with memory_eviction = none, 300 requests for new keys of a GCRA memory limit made $((before - after)) exhausted keys of another limit start over (counted as evicted_full: $evicted_full)"
holds "a new GCRA key never evicts a memory entry that is not back at full capacity"
