#!/usr/bin/env bash
# Finding 52 (medium): redefining a concurrency limit's period -- even lengthening it, or an unrelated
# rate_limit_define that only changes the period's spelling to another length -- makes every session lease
# held on every key of the limit invisible at once: a key admits N more holders. A session lease's tag
# carries its time band, a number computed with the period at the time of the acquire (band = now /
# ceil(period / 8)); acquires after the redefinition probe the bands of the new width, numbers the old
# leases never carry. The README says of redefinitions only "Lowering N applies to new acquires; leases
# already held stay until they end", and promises "at most rate holders of a key at once".
# Attack: N = 1, period 1 hour; session A takes the key's slot (session lease) and keeps it; the DBA
# lengthens the period to 2 hours; session B acquires the same key.
# Expected: denied (A still holds the only slot).
here=$(dirname "$0")
source "$here/lib.sh"
setup_review
q -c "SELECT rate_limit_define('exports', rate => 1, period => '1 hour', algorithm => 'concurrency')" >/dev/null || exit 2
out=$(q -c "SELECT allowed FROM rate_limit_acquire('acme', 'exports', 'session')" \
    -c "\\! psql -X -q -At -c \"SELECT allowed FROM rate_limit_acquire('acme', 'exports')\"" \
    -c "SELECT rate_limit_define('exports', rate => 1, period => '2 hours', algorithm => 'concurrency')" \
    -c "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND objsubid = 21070 AND pid = pg_backend_pid() AND granted" \
    -c "\\! psql -X -q -At -c \"SELECT allowed FROM rate_limit_acquire('acme', 'exports')\"" | tr '\n' ' ')
echo "A acquires, B before, (define 2 hours), A's leases, B after: $out"
read -r a before held after <<<"$out"
[ "$a" = t ] && [ "$before" = f ] && [ "$held" = 1 ] || { echo "unexpected setup"; exit 2; }
[ "$after" = f ] && holds "a held session lease still counts after the period is redefined"
reproduced "N = 1, slot held by A's session lease: after the period went from 1 to 2 hours, B was admitted too"
