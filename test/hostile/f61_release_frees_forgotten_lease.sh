#!/usr/bin/env bash
# Finding 61 (low-medium): f50's fix makes rate_limit_release skip expired session leases (they count for
# no one) and free a live one. A session lease of a limit since dropped and defined again with another
# period -- exactly what the 55000 hint of f52's fix tells the DBA to do -- counts for no one either
# (acquires probe the bands of the new period: "which forgets the session leases held"), yet it is not
# expired by its own old period, so release frees it first, returns true, and leaves the session's live
# lease held: the key stays blocked for another holder until that lease's period ends or the session goes.
# Attack: N = 1, period 1 hour; a pooled session takes a session lease; the DBA drops the limit and defines
# it again with period 1 minute; the session takes a lease again (granted: the old one is forgotten), then
# releases it; another session acquires the key.
# Expected: the release frees the live lease (the one acquires count), and the other session gets the slot.
here=$(dirname "$0")
source "$here/lib.sh"
setup_review
export PGOPTIONS="-c client_min_messages=error"  # B's autocommit probe warns that its lease ends at once
q -c "SELECT rate_limit_define('exports', rate => 1, period => '1 hour', algorithm => 'concurrency')" >/dev/null || exit 2
out=$(q_any -v VERBOSITY=sqlstate -c "SELECT allowed FROM rate_limit_acquire('acme', 'exports', 'session')" \
    -c "SELECT 'dropped' FROM rate_limit_drop('exports')" \
    -c "SELECT 'defined' FROM rate_limit_define('exports', rate => 1, period => '1 minute', algorithm => 'concurrency')" \
    -c "SELECT allowed FROM rate_limit_acquire('acme', 'exports', 'session')" \
    -c "SELECT rate_limit_release('acme', 'exports')" \
    -c "\\! psql -X -q -At -c \"SELECT allowed FROM rate_limit_acquire('acme', 'exports')\"" 2>&1 | tr '\n' ' ')
echo "A acquires (1 hour), drop, define 1 minute, A acquires, A releases, B acquires: $out"
read -r first dropped defined second released b_got <<<"$out"
[ "$first $dropped $defined $second" = "t dropped defined t" ] || { echo "unexpected setup"; exit 2; }
[ "$released" = t ] && [ "$b_got" = t ] && holds "release freed the live lease; the key is free again"
reproduced "after drop + define with another period, A's release returned '$released' but B got '$b_got' (the lease that counts is still held)"
