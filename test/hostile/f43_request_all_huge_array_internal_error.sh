#!/usr/bin/env bash
# Finding 43 (low, any login role): rate_limit_request_all with about 7.9 million triples or more fails with
# XX000 "invalid memory alloc request size" (an internal error, which monitoring treats as a server bug):
# checked_triples pallocs sizeof(Triple) (136 bytes) per triple in one piece, over MaxAllocSize (1 GB), before
# looking at any element. The arrays themselves are legal (two 40 MB text arrays). rate_limit_request_many
# takes 10 million keys on the same server.
# Attack: 10 million (key, limit) triples on one durable limit.
# Expected: a SQLSTATE of the input class (54000 program_limit_exceeded or 22023, with the maximum in the
# message), or the call decided; never XX000.
source "$(dirname "$0")/lib.sh"
setup_review
q -c "SELECT rate_limit_define('big', 10, '1 hour')" >/dev/null || exit 2
out=$(q_any -v VERBOSITY=verbose -c "SELECT count(*) FROM rate_limit_request_all(array_fill('k'::text, ARRAY[10000000]),
                                                                                 array_fill('big'::text, ARRAY[10000000]))")
echo "$out" | head -3
grep -q '^ERROR:  XX000' <<<"$out" && reproduced "10 million triples: $(head -1 <<<"$out")"
grep -q '^ERROR:  \(54000\|22023\|54001\)' <<<"$out" || grep -q '^10000001$' <<<"$out" || { echo "unexpected output"; exit 2; }
holds "10 million triples: a SQLSTATE of the input class, or decided"
