#!/usr/bin/env bash
# Finding 60 (low-medium, DBA): f52's fix lives in rate_limit_define only. An UPDATE of rate_limit_config's
# period (the table is the extension's configuration, written by hand in the README's and the earlier
# reviews' own recipes: its row trigger validates each row as rate_limit_define does and invalidates the
# caches, also under session_replication_role = replica and logical replication) changes a concurrency
# limit's period without a word: every session lease held on every key of the limit stops counting, and a
# key admits N more holders. The README says "The period cannot change once defined (55000 ...)".
# Attack: N = 1, period 1 hour; session A takes the key's slot (session lease) and keeps it; the DBA runs
# UPDATE rate_limit_config SET period = '2 hours'; session B acquires the same key.
# Expected: the UPDATE refused with 55000 by the row trigger (as rate_limit_define refuses it), B denied.
here=$(dirname "$0")
source "$here/lib.sh"
setup_review
out=$(lease_held_across -c "UPDATE rate_limit_config SET period = '2 hours' WHERE name = 'exports'")
echo "A acquires, B before, UPDATE period 2 hours, A's leases, B after: $out"
read -r a before _ <<<"$out"
held=$(awk '{print $(NF-1)}' <<<"$out")
after=$(awk '{print $NF}' <<<"$out")
[ "$a" = t ] && [ "$before" = f ] || { echo "unexpected setup"; exit 2; }
period=$(q -c "SELECT period FROM rate_limit_config WHERE name = 'exports'")
if { grep -q 55000 <<<"$out" && [ "$period" = "01:00:00" ]; } || { [ "$held" = 1 ] && [ "$after" = f ]; }; then
    holds "an UPDATE of a concurrency limit's period is refused (or the held session lease still counts)"
fi
reproduced "N = 1, slot held by A's session lease (still held: $held): after UPDATE ... SET period = '2 hours' (now $period), B got '$after'"
