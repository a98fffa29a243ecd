#!/usr/bin/env bash
# Finding 51 (low-medium): after N is lowered (rate_limit_define again, or an override), a new acquire is
# admitted while the key already has N or more holders in flight: acquires probe only slots 0 .. N-1, so
# leases held on the slots beyond are not counted, and a slot freed below N is handed out at once.
# Resolved as documented behaviour (README: leases): lowering N takes effect as the leases held on the
# slots above the new N end; until then a key has at most the old N holders (never more: the slots above
# the new N are only freed, never taken again). Making it exact would mean probing every slot any past N
# had, on every acquire, for ever.
# Attack: N = 3, three session leases held (slots 0, 1, 2); the DBA lowers N to 2; the holder of slot 0
# releases (2 still in flight); a new worker acquires (slot 0: 3 in flight, the old N); another one acquires.
# Expected: the first newcomer admitted (as documented), the second denied: never more than the old N.
here=$(dirname "$0")
source "$here/lib.sh"
setup_review
export PGOPTIONS="-c client_min_messages=error"  # the autocommit probe warns that its lease ends at once
q -c "SELECT rate_limit_define('exports', rate => 3, period => '1 hour', algorithm => 'concurrency')" >/dev/null || exit 2
out=$(q -c "SELECT count(*) FILTER (WHERE allowed) FROM generate_series(1, 3) g, LATERAL rate_limit_acquire('acme' || left(g::text, 0), 'exports', 'session')" \
    -c "SELECT rate_limit_define('exports', rate => 2, period => '1 hour', algorithm => 'concurrency')" \
    -c "SELECT rate_limit_release('acme', 'exports')" \
    -c "SELECT allowed FROM rate_limit_acquire('acme', 'exports', 'session')" \
    -c "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND objsubid = 21070 AND pid = pg_backend_pid() AND granted" \
    -c "\\! psql -X -q -At -c \"SELECT allowed FROM rate_limit_acquire('acme', 'exports')\"" | tr '\n' ' ')
echo "taken, released, newcomer under N = 2, held, second newcomer: $out"
read -r taken released newcomer held second <<<"$out"
[ "$taken" = 3 ] && [ "$released" = t ] || { echo "unexpected setup"; exit 2; }
[ "$newcomer" = t ] && [ "$held" = 3 ] && [ "$second" = f ] &&
    holds "after N went from 3 to 2, at most the old N (3) hold leases at once, as documented"
reproduced "N lowered from 3 to 2: newcomer $newcomer, $held held, second newcomer $second"
