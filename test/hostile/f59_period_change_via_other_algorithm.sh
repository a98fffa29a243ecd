#!/usr/bin/env bash
# Finding 59 (medium): f52's fix (rate_limit_define refuses to change a concurrency limit's period, 55000)
# compares the new definition with the one just before it only. Redefining the limit under another
# algorithm and then back to 'concurrency' with another period -- two calls of rate_limit_define, even in
# one transaction, no table written by hand -- passes both checks, and every session lease held on every key
# of the limit stops counting at once (its tag carries a time band of the old period): a key admits N more
# holders. The README says "The period cannot change once defined (55000 ...)" and names only drop + define
# as the way to forget the leases held.
# Attack: N = 1, period 1 hour; session A takes the key's slot (session lease) and keeps it; in one
# transaction the DBA (or a migration) defines the limit as a token_bucket of period 2 hours, then as a
# concurrency limit of period 2 hours; session B acquires the same key.
# Expected: B denied (A still holds the only slot): the change back to 'concurrency' refused with 55000 as
# a direct change is (or the period's bands kept, so the held lease still counts).
here=$(dirname "$0")
source "$here/lib.sh"
setup_review
out=$(lease_held_across -c "BEGIN" \
    -c "SELECT 'away' FROM rate_limit_define('exports', rate => 1, period => '2 hours', algorithm => 'token_bucket')" \
    -c "SELECT 'back' FROM rate_limit_define('exports', rate => 1, period => '2 hours', algorithm => 'concurrency')" \
    -c "COMMIT")
echo "A acquires, B before, define token_bucket 2 hours + concurrency 2 hours, A's leases, B after: $out"
read -r a before _ <<<"$out"
held=$(awk '{print $(NF-1)}' <<<"$out")
after=$(awk '{print $NF}' <<<"$out")
[ "$a" = t ] && [ "$before" = f ] || { echo "unexpected setup"; exit 2; }
if grep -q 55000 <<<"$out" || { [ "$held" = 1 ] && [ "$after" = f ]; }; then
    holds "a period change through another algorithm is refused (or the held session lease still counts)"
fi
reproduced "N = 1, slot held by A's session lease (still held: $held): after token_bucket and back with another period, B got '$after'"
