#!/usr/bin/env bash
# Finding 33 (medium-high): rate_limit_enforce and rate_limit_settle ignore per-key tiers. Both were merged
# (1cc3a21) after the tiers (0a13a2a) and decide under limit_lookup()'s limit, never effective_limit()'s
# (request_functions.cpp: enforce_body, settle_reservation_body), while the README says "Every decision
# function and rate_limit_cleanup use the key's own limit".
# - A key a DBA throttled below the limit (rate_limit_override('abuser', 'api', 1): 1 an hour) gets the
#   limit's 10 at once through rate_limit_enforce, which PUBLIC may execute (the function made for triggers).
# - A gold key (1000 an hour) with 500 left that settles a reservation of 2 with an actual cost of 1 (a
#   refund of 1) is capped at the limit's capacity: 490 units of the paying customer are destroyed; and a
#   reservation of 5 cannot be settled at all ("reserved 5 exceeds the capacity 2", the limit's capacity).
# Expected: both use the key's own limit, as rate_limit_request does: enforce admits 'abuser' once, and the
# refund leaves 'gold' 501.
source "$(dirname "$0")/lib.sh"
setup_review

out=$(q_any <<'SQL'
SELECT rate_limit_define('api', 10, '1 hour');
SELECT rate_limit_override('abuser', 'api', 1);
SELECT rate_limit_override('gold', 'api', 1000);
DO $$
DECLARE admitted int := 0;
BEGIN
    FOR i IN 1..10 LOOP
        BEGIN
            PERFORM rate_limit_enforce('abuser', 'api');
            admitted := admitted + 1;
        EXCEPTION WHEN SQLSTATE 'RL001' THEN NULL;
        END;
    END LOOP;
    RAISE NOTICE 'enforce admitted %', admitted;
END $$;
SELECT 'gold after 500', remaining FROM rate_limit_request('gold', 'api', 500);
SELECT 'gold settled', remaining FROM rate_limit_settle('gold', 'api', 2, 1);
SELECT 'gold left', remaining FROM rate_limit_check('gold', 'api', 0.000001);
SQL
)
echo "$out"
admitted=$(sed -n 's/.*enforce admitted \([0-9]*\).*/\1/p' <<<"$out")
left=$(sed -n 's/^gold left|//p' <<<"$out")
[ -n "$admitted" ] && [ -n "$left" ] || { echo "setup failed"; exit 2; }
if [ "$admitted" != 1 ] || [ "$left" -lt 500 ]; then
    reproduced "rate_limit_enforce admitted $admitted calls of a key overridden to 1 an hour (the limit's 10), and rate_limit_settle refunding 1 unit left a 1000-unit key with 500 left at $left (the limit's capacity)"
fi
holds "rate_limit_enforce and rate_limit_settle decide under the key's override"
