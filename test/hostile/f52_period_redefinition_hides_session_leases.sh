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
# Expected: B denied (A still holds the only slot). Fixed: rate_limit_define refuses to change a
# concurrency limit's period (55000, the hint says to drop and define again, which forgets the leases, or
# to use another name); B is still denied after the refused redefinition.
here=$(dirname "$0")
source "$here/lib.sh"
setup_review
out=$(lease_held_across -c "SELECT rate_limit_define('exports', rate => 1, period => '2 hours', algorithm => 'concurrency')" \
    -c "SELECT rate_limit_define('exports', rate => 1, period => '60 minutes', algorithm => 'concurrency')")
echo "A acquires, B before, define 2 hours, define 60 minutes (same period), A's leases, B after: $out"
read -r a before refused same held after <<<"$out"
[ "$a" = t ] && [ "$before" = f ] && [ "$held" = 1 ] || { echo "unexpected setup"; exit 2; }
[ "$refused" = "ERROR:" ] && grep -q 55000 <<<"$out" && [ "$after" = f ] &&
    holds "a period change of a concurrency limit is refused (55000); the held session lease still counts"
reproduced "N = 1, slot held by A's session lease: after a period redefinition, B got '$after' ($out)"
