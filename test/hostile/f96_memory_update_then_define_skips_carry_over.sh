#!/usr/bin/env bash
# Finding 96 (low; DBA): an UPDATE of rate_limit_config by hand asks, at commit, for the memory limit's
# entries to be relabelled to the new row (refresh_limit: their numbers kept, read under the new row, as a
# table limit's rows are). rate_limit_define then cancels every refresh of the limit pending in the
# transaction (memory_state_cancel_refresh), meaning to cancel the one its own upsert asks for, and carries
# the entries over from the definition it read: the UPDATEd row. Entries made before the UPDATE carry the
# fingerprint of the row before it, so the carry-over (rescale_limit) skips them, and no refresh relabels
# them: after the commit each such entry holds its old numbers under a fingerprint of neither definition,
# and the first call on it, after waiting for a change and reading the definition again, reads those
# numbers as they are under the new definition (accept_other_numbers). A table limit in the same
# transaction keeps its balance: the define rewrites its rows from the UPDATEd row.
# Attack: 'm' (memory) and 'd' (durable), 1000 per hour; key 'k' used 990 (10 left). In one transaction:
# UPDATE rate_limit_config SET rate = 500, capacity = 500; then rate_limit_define(10 per hour,
# proportional). The same with the define first, then the UPDATE (f82's order) as a control.
# Expected: as for 'd': the UPDATE keeps 10 units (10 of 500), the define scales them to 0.2 of 10: nothing
# admitted. Found: 'm' admits 10 (10 units read as 10 of 10: the key's whole new capacity), 'd' 0.
here=$(dirname "$0")
source "$here/lib.sh"
setup_review
export PGOPTIONS="-c client_min_messages=error"
q -c "SHOW shared_preload_libraries" | grep -q pg_ratelimit || { echo "needs pg_ratelimit preloaded"; exit 2; }
trap 'q -c "SELECT rate_limit_drop(name) FROM rate_limit_config WHERE storage = '"'"'memory'"'"'" >/dev/null 2>&1; cleanup_review' EXIT

admitted_after() {  # admitted_after STORAGE FIRST SECOND: 990 of 1000 used, FIRST and SECOND in one transaction
    q -c "SELECT rate_limit_define('l', 1000, '1 hour', storage => '$1', rescale => 'reset')" \
      -c "SELECT rate_limit_reset('k', 'l')" -c "SELECT (rate_limit_request('k', 'l', 990)).allowed" >/dev/null || exit 2
    q -c "BEGIN" -c "$2" -c "$3" -c "COMMIT" >/dev/null || exit 2
    q -c "SELECT count(*) FILTER (WHERE (rate_limit_request('k', 'l')).allowed) FROM generate_series(1, 20)"
    q -c "SELECT rate_limit_drop('l')" >/dev/null
}
update="UPDATE rate_limit_config SET rate = 500, capacity = 500 WHERE name = 'l'"
define_memory="SELECT rate_limit_define('l', 10, '1 hour', storage => 'memory')"
define_durable="SELECT rate_limit_define('l', 10, '1 hour')"
memory=$(admitted_after memory "$update" "$define_memory")
durable=$(admitted_after durable "$update" "$define_durable")
memory_control=$(admitted_after memory "$define_memory" "UPDATE rate_limit_config SET rate = 5, capacity = 5 WHERE name = 'l'")
echo "990 of 1000 used; UPDATE to 500 per hour by hand, then rate_limit_define(10 per hour), one transaction:"
echo "  memory: $memory of 20 admitted; durable: $durable of 20 admitted"
echo "  (control, memory: the define first, then an UPDATE to 5 per hour: $memory_control of 20 admitted)"
[ "$durable" = 0 ] || { echo "unexpected: durable admitted $durable"; exit 2; }
[ "$memory" != "$durable" ] &&
    reproduced "an UPDATE by hand followed by rate_limit_define in one transaction leaves a memory limit's entries uncarried: $memory admitted (durable: $durable)"
holds "an UPDATE by hand followed by rate_limit_define carries memory entries over as table rows are"
