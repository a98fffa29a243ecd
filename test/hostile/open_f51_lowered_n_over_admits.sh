#!/usr/bin/env bash
# Finding 51 (low-medium): after N is lowered (rate_limit_define again, or an override), a new acquire is
# admitted while the key already has N or more holders in flight: acquires probe only slots 0 .. N-1, so
# leases held on the slots beyond are not counted, and a slot freed below N is handed out at once. The
# README says "Lowering N applies to new acquires; leases already held stay until they end" and "at most
# rate holders of a key at once"; the first new acquire after a holder leaves is a new acquire, and it makes
# more than the new N in flight (old N - 1 + ... up to old N + new N - 1 at worst while they last).
# Attack: N = 3, three session leases held (slots 0, 1, 2); the DBA lowers N to 2 to protect an overloaded
# backend; the holder of slot 0 releases (2 still in flight, = the new N); a new worker acquires.
# Expected: denied (2 holders in flight, N = 2) -- or the README saying plainly that until the old leases
# end, up to old N + new N - 1 can be in flight.
here=$(dirname "$0")
source "$here/lib.sh"
setup_review
q -c "SELECT rate_limit_define('exports', rate => 3, period => '1 hour', algorithm => 'concurrency')" >/dev/null || exit 2
out=$(q -c "SELECT count(*) FILTER (WHERE allowed) FROM generate_series(1, 3) g, LATERAL rate_limit_acquire('acme' || left(g::text, 0), 'exports', 'session')" \
    -c "SELECT rate_limit_define('exports', rate => 2, period => '1 hour', algorithm => 'concurrency')" \
    -c "SELECT rate_limit_release('acme', 'exports')" \
    -c "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND objsubid = 21070 AND pid = pg_backend_pid() AND granted" \
    -c "\\! psql -X -q -At -c \"SELECT allowed FROM rate_limit_acquire('acme', 'exports')\"" | tr '\n' ' ')
echo "taken, released, still held, new acquire under N = 2: $out"
read -r taken released held newcomer <<<"$out"
[ "$taken" = 3 ] && [ "$released" = t ] && [ "$held" = 2 ] || { echo "unexpected setup"; exit 2; }
[ "$newcomer" = f ] && holds "with N lowered to 2 and 2 holders in flight, a new acquire is denied"
reproduced "N lowered to 2 with 2 holders in flight: a new acquire was admitted (3 in flight)"
