#!/usr/bin/env bash
# Finding 78 (medium, DBA's redefinition): a memory limit switched between token_bucket and gcra gives every
# key its full capacity back. The README (Redefining a limit) says another algorithm starts the keys afresh
# "except between token_bucket and gcra, which hold the same balances: a key keeps its balance across that
# change", and (Storage modes) that "all three make the same decisions"; durable and unlogged limits keep
# the balances. For memory, rate_limit_config's row trigger (config_triggers.cpp: forget_memory_state)
# forgets the limit's entries at commit whenever the algorithm column changes, token_bucket <-> gcra
# included; and core::memory_definition mixes the algorithm into each entry's definition, which
# rescale_limit (memory_state.cpp) never rewrites, so even a carried-over entry would count as absent.
# Attack: the same limit (10 a day) in each storage mode; key 'k' uses all 10; the limit is redefined
# with algorithm => 'gcra' (same numbers), then back to 'token_bucket'; 'k' asks 10 more after each.
# Expected: 0 admitted after each switch, as durable and unlogged do.
source "$(dirname "$0")/lib.sh"
setup_review
out=$(q <<'SQL'
SELECT count(rate_limit_define('sw_' || s, 10, '1 day', storage => s)) FROM unnest(ARRAY['durable', 'unlogged', 'memory']) s;
SELECT string_agg(n::text, '|' ORDER BY s) FROM (SELECT s, count(*) FILTER (WHERE allowed) n FROM unnest(ARRAY['durable', 'unlogged', 'memory']) s,
    LATERAL rate_limit_request_many(array_fill('k'::text, ARRAY[10]), 'sw_' || s) GROUP BY s) x;
SELECT count(rate_limit_define('sw_' || s, 10, '1 day', algorithm => 'gcra', storage => s)) FROM unnest(ARRAY['durable', 'unlogged', 'memory']) s;
SELECT string_agg(n::text, '|' ORDER BY s) FROM (SELECT s, count(*) FILTER (WHERE allowed) n FROM unnest(ARRAY['durable', 'unlogged', 'memory']) s,
    LATERAL rate_limit_request_many(array_fill('k'::text, ARRAY[10]), 'sw_' || s) GROUP BY s) x;
SELECT count(rate_limit_define('sw_' || s, 10, '1 day', algorithm => 'token_bucket', storage => s)) FROM unnest(ARRAY['durable', 'unlogged', 'memory']) s;
SELECT string_agg(n::text, '|' ORDER BY s) FROM (SELECT s, count(*) FILTER (WHERE allowed) n FROM unnest(ARRAY['durable', 'unlogged', 'memory']) s,
    LATERAL rate_limit_request_many(array_fill('k'::text, ARRAY[10]), 'sw_' || s) GROUP BY s) x;
SQL
) || exit 2
read -r first gcra back <<<"$(grep '|' <<<"$out" | tr '\n' ' ')"
echo "admitted of 10 (durable|memory|unlogged): at first $first; after token_bucket -> gcra $gcra; after gcra -> token_bucket $back"
[ "$first" = "10|10|10" ] || { echo "unexpected setup"; exit 2; }
[ "$gcra" != "0|0|0" ] || [ "$back" != "0|0|0" ] &&
    reproduced "a switch between token_bucket and gcra refilled the memory limit's exhausted key ($gcra, then $back)"
holds "a memory key keeps its balance across token_bucket <-> gcra, as table keys do"
