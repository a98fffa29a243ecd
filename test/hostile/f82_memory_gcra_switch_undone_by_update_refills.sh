#!/usr/bin/env bash
# Finding 82 (low, DBA's redefinition): rate_limit_define switching a memory limit from token_bucket to
# gcra queues the carry-over of its entries to commit (f78's fix: rescale_limit then rewrites each entry's
# definition to GCRA's). An UPDATE rate_limit_config setting the algorithm back in the same transaction
# queues nothing (config_triggers.cpp: token bucket <-> GCRA "carries over"): at commit the entries are
# rewritten as GCRA entries under a limit that is a token bucket again, so every one counts as absent
# (core::memory_definition) and every key is full. The limit did not change; durable keys keep their
# balance (0 left); the memory keys get a whole capacity back.
# Attack: the same limit (10 a day) durable and memory; 'k' uses all 10; in one transaction
# rate_limit_define(..., algorithm => 'gcra') and UPDATE rate_limit_config SET algorithm = 'token_bucket';
# 'k' asks 20 more.
# Expected: 0 admitted in both storages (the README: an UPDATE "keeps every number as it is").
source "$(dirname "$0")/lib.sh"
setup_review
out=$(q <<'SQL'
SELECT count(rate_limit_define('undone_' || s, 10, '1 day', storage => s)) FROM unnest(ARRAY['durable', 'memory']) s;
SELECT count(*) FROM unnest(ARRAY['durable', 'memory']) s, LATERAL rate_limit_request_many(array_fill('k'::text, ARRAY[10]), 'undone_' || s) WHERE allowed;
BEGIN;
SELECT count(rate_limit_define('undone_' || s, 10, '1 day', algorithm => 'gcra', storage => s)) FROM unnest(ARRAY['durable', 'memory']) s;
UPDATE rate_limit_config SET algorithm = 'token_bucket' WHERE name LIKE 'undone_%';
COMMIT;
SELECT 'after', string_agg(s || '=' || n || ' ' || alg, ', ' ORDER BY s) FROM (SELECT s, (SELECT algorithm FROM rate_limit_config WHERE name = 'undone_' || s) alg,
    count(*) FILTER (WHERE allowed) n FROM unnest(ARRAY['durable', 'memory']) s, LATERAL rate_limit_request_many(array_fill('k'::text, ARRAY[20]), 'undone_' || s) GROUP BY s) x;
SQL
) || exit 2
after=$(sed -n 's/^after|//p' <<<"$out")
echo "admitted of 20 after define(gcra) + UPDATE back to token_bucket in one transaction: $after"
[ "$after" = "durable=0 token_bucket, memory=0 token_bucket" ] ||
    reproduced "a memory limit's exhausted key got its capacity back from a switch undone in the same transaction ($after)"
holds "a switch undone by an UPDATE in the same transaction leaves the memory keys' balances"
