#!/usr/bin/env bash
# Finding 48 (medium): a concurrency limit admits more than N holders once the server's clock steps back
# (an NTP step, a VM resumed or migrated, an operator's fix): the key's session leases vanish from the
# count (transaction leases, whose tags carry no band, still count). Session leases are locks on tags that
# carry the time band they were taken in (period / 8 wide), and an acquire probes only the bands
# current - 8 .. current of *its own* reading of the clock; a step back across a band boundary puts every
# session lease taken in the later band(s) out of sight, for transaction and session acquires alike. With period '8 seconds' (1-second bands) a step of 0.3 s at the wrong moment is
# enough; with '2 hours' a step across any quarter-hour boundary. (A forward step likewise expires every
# session lease at once, although none has been held for `period`.)
# Attack: N = 1, period 8 s. Session A takes the slot (session lease) at 00:00:01.2 and holds it; the clock
# steps back 0.3 s (pg_ratelimit.fake_now = 00:00:00.9 in session B, as every backend would read it); B
# acquires a session lease and a transaction lease on the same key.
# Expected: both denied (the slot is held); at most N = 1 holder. README: "at most rate holders of a key at
# once", "never admits more than the limit allows".
here=$(dirname "$0")
source "$here/lib.sh"
setup_review
q -c "SELECT rate_limit_define('jobs', rate => 1, period => '8 seconds', algorithm => 'concurrency')" >/dev/null || exit 2
# Session A: takes the only slot and keeps its session for 6 s.
psql -X -q -At -d "$REVIEW_DB" -c "SET pg_ratelimit.fake_now = '2026-01-01 00:00:01.2'" \
    -c "SELECT allowed FROM rate_limit_acquire('acme', 'jobs', 'session')" -c "SELECT pg_sleep(6)" >/dev/null 2>&1 &
holder=$!
for _ in $(seq 1 50); do
    [ "$(q -c "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND objsubid = 21070 AND granted")" = 1 ] && break
    sleep 0.1
done
[ "$(q -c "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND objsubid = 21070 AND granted")" = 1 ] ||
    { echo "session A holds no lease"; exit 2; }
same=$(q -c "SET pg_ratelimit.fake_now = '2026-01-01 00:00:01.3'" -c "SELECT allowed FROM rate_limit_acquire('acme', 'jobs', 'session')")
# B: a transaction lease (its own transaction), then a session lease.
back=$(q -c "SET pg_ratelimit.fake_now = '2026-01-01 00:00:00.9'" \
    -c "BEGIN" -c "SELECT allowed FROM rate_limit_acquire('acme', 'jobs')" -c "COMMIT" \
    -c "SELECT allowed FROM rate_limit_acquire('acme', 'jobs', 'session')" | tr '\n' ' ')
wait "$holder"
echo "slot held by A: acquire 0.1 s later -> $same; after a 0.3 s step back: transaction, session -> $back"
[ "$same" = f ] || { echo "unexpected: the held slot was not seen without a step"; exit 2; }
[ "$back" = "f f " ] && holds "a held lease still counts after the clock steps back"
reproduced "N = 1 with its slot held, a 0.3 s step back of the clock admitted $(grep -o t <<<"$back" | wc -l) more holder(s)"
