#!/usr/bin/env bash
# Finding 28 (low, careless DBA): rate_limit_config's CHECK for sliding windows, (algorithm <>
# 'sliding_window' OR (capacity = rate AND max_reserved = 0 AND period >= '1 ms')), lets max_reserved
# NULL through (NULL = 0 is unknown, and a CHECK passes on unknown). The natural hand-written row, which
# omits max_reserved as one does for the other algorithms, is accepted, and then every call of the limit
# fails with 22023 "sliding_window limits cannot take reservations ... max_reserved is Infinity" and the
# hint "Omit max_reserved", which is what the DBA did. (max_reserved => 5 is refused at the INSERT, 23514.)
# Expected: the INSERT is refused (23514), as every other sliding-window row the limit could not use
# (e.g. the CHECK says max_reserved IS NOT NULL AND max_reserved = 0; or NULL means none for a sliding
# window, as rate_limit_define stores it).
source "$(dirname "$0")/lib.sh"
setup_review

insert=$(q_any -v VERBOSITY=sqlstate -c "INSERT INTO rate_limit_config (name, algorithm, rate, period, capacity)
                                          VALUES ('by_hand', 'sliding_window', 10, '1 minute', 10)")
use=$(q_any -c "SELECT allowed FROM rate_limit_request('k', 'by_hand')" | head -n 1)
echo "INSERT of a sliding window without max_reserved: ${insert:-accepted}; a request then: $use"
if [ -z "$insert" ] && [[ "$use" == *"cannot take reservations"* ]]; then
    reproduced "rate_limit_config accepted a sliding-window row its CHECK means to refuse (max_reserved NULL), and every request of it fails"
fi
holds "a sliding-window row the limit cannot use is refused when written (or works)"
