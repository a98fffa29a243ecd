-- After crash recovery: does the server hold what its clients were told, and are the tables and their
-- indexes consistent? crash_test.sh runs this through psql once the restarted server accepts
-- connections, after loading two temporary tables in the same session:
--   crash_acks(limit_name, key, acknowledged, in_doubt): the load driver's counts for the round, in
--     units: admissions acknowledged, and admissions whose outcome the crash hid;
--   crash_baseline(limit_name, key, consumed): each key's consumption verified after the previous crash
--     (empty before the first).
-- Prints "figures ...", "indexes ..." and one "failure ..." line per problem found; leaves the
-- temporary table crash_consumed, the baseline for the next round.
SET client_min_messages = warning;
CREATE TEMP TABLE crash_failures (what text);

-- The heap as a sequential scan reads it, independent of every index.
SET enable_indexscan = off;
SET enable_indexonlyscan = off;
SET enable_bitmapscan = off;
CREATE TEMP TABLE crash_rows AS SELECT ctid AS tid, limit_name, key, value FROM rate_limit_state;
RESET enable_indexscan;
RESET enable_indexonlyscan;
RESET enable_bitmapscan;

INSERT INTO crash_failures
SELECT format('%s rows for key %s of limit %s', count(*), key, limit_name)
  FROM crash_rows GROUP BY limit_name, key HAVING count(*) > 1;
INSERT INTO crash_failures
SELECT format('the definitions of the test limits changed: %s', string_agg(format('%s capacity %s', name, capacity), ', '))
  FROM rate_limit_config
HAVING count(*) FILTER (WHERE (name, capacity) IN (('crash', 1e6), ('crash_tight', 20))) <> 2;
INSERT INTO crash_failures
SELECT format('a row of a limit that does not exist: %s', r.limit_name)
  FROM crash_rows r LEFT JOIN rate_limit_config c ON c.name = r.limit_name
 WHERE c.name IS NULL;

-- Every key that was used (acknowledged or in doubt), verified before, or has a row. Its consumption is
-- capacity - value: the limits refill one unit per 1000 days, a millionth of a unit over the whole test.
CREATE TEMP TABLE crash_keys AS
SELECT k.*, round(k.consumed_exact)::bigint AS consumed, d.allowed AS check_allowed, d.remaining AS check_remaining
  FROM (SELECT limit_name, key,
               coalesce(a.acknowledged, 0) AS acknowledged,
               coalesce(a.in_doubt, 0) AS in_doubt,
               coalesce(b.consumed, 0) AS before,
               coalesce(c.capacity - r.value, 0) AS consumed_exact,
               c.capacity
          FROM crash_acks a
               FULL JOIN crash_baseline b USING (limit_name, key)
               FULL JOIN crash_rows r USING (limit_name, key)
               LEFT JOIN rate_limit_config c ON c.name = limit_name) k
       -- The extension's own lookup (through the hash index): the decision of a cost-1 request now.
       CROSS JOIN LATERAL rate_limit_check(k.key, k.limit_name) d;

-- Since the previous crash a key consumed (consumed - before) units: at least every acknowledged
-- admission, at most those plus the ones in doubt; whole units; never more than the capacity; and
-- rate_limit_check agrees with the row.
INSERT INTO crash_failures
SELECT format('key %s of limit %s: consumed %s units since the previous crash (%s before, %s now, exactly %s), '
              'acknowledged %s, in doubt %s; rate_limit_check: allowed %s, remaining %s',
              key, limit_name, consumed - before, before, consumed, consumed_exact, acknowledged, in_doubt,
              check_allowed, check_remaining)
  FROM crash_keys
 WHERE NOT (consumed - before BETWEEN acknowledged AND acknowledged + in_doubt
            AND abs(consumed_exact - consumed) < 1e-3
            AND consumed <= capacity
            AND check_allowed = (consumed + 1 <= capacity)
            AND check_remaining = greatest(capacity - consumed - 1, 0));

CREATE TEMP TABLE crash_consumed AS
SELECT limit_name, key, consumed FROM crash_keys WHERE consumed <> 0 ORDER BY limit_name, key;

SELECT format('figures keys=%s acknowledged=%s in_doubt=%s consumed=%s mismatches=%s',
              count(*), sum(acknowledged), sum(in_doubt), sum(consumed - before),
              (SELECT count(*) FROM crash_failures WHERE what LIKE 'key %'))
  FROM crash_keys;

-- amcheck on every btree index of both tables (the primary keys), each heap tuple looked up in it
-- (heapallindexed); the parent check also verifies the links between levels.
DO $$
DECLARE
    index regclass;
BEGIN
    FOR index IN
        SELECT i.indexrelid::regclass
          FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid JOIN pg_am am ON am.oid = c.relam
         WHERE i.indrelid IN ('rate_limit_state'::regclass, 'rate_limit_config'::regclass) AND am.amname = 'btree'
    LOOP
        BEGIN
            PERFORM bt_index_check(index, heapallindexed => true);
            PERFORM bt_index_parent_check(index, heapallindexed => true, rootdescend => true);
        EXCEPTION WHEN OTHERS THEN
            INSERT INTO crash_failures VALUES (format('amcheck on %s: %s', index, SQLERRM));
        END;
    END LOOP;
END
$$;

-- amcheck's heap check: tuple headers, HOT chains, transaction ids.
INSERT INTO crash_failures
SELECT format('verify_heapam(%s): block %s offset %s attribute %s: %s', rel, v.blkno, v.offnum, v.attnum, v.msg)
  FROM unnest(ARRAY['rate_limit_state', 'rate_limit_config']::regclass[]) rel
       CROSS JOIN LATERAL verify_heapam(rel) v;

-- amcheck has no check for hash indexes. Look every row up through rate_limit_state_lookup, the way
-- requests find it: each must be found there, at its own position (ctid).
SET enable_seqscan = off;
SET enable_tidscan = off;
SET enable_bitmapscan = off;
SET enable_hashjoin = off;
SET enable_mergejoin = off;
CREATE TEMP VIEW crash_found_through_hash AS
SELECT count(*) AS found
  FROM crash_rows r
 WHERE EXISTS (SELECT 1 FROM rate_limit_state s
                WHERE s.limit_name || s.key = (r.limit_name || r.key) COLLATE "C" AND s.ctid = r.tid);
DO $$
DECLARE
    line text;
    plan text := '';
BEGIN
    FOR line IN EXECUTE 'EXPLAIN (COSTS OFF) SELECT * FROM crash_found_through_hash' LOOP
        plan := plan || line || E'\n';
    END LOOP;
    IF position('Index Scan using rate_limit_state_lookup' IN plan) = 0 THEN
        INSERT INTO crash_failures VALUES ('the row lookup does not go through the hash index: ' || plan);
    END IF;
END
$$;
CREATE TEMP TABLE crash_hash AS SELECT found FROM crash_found_through_hash;
RESET enable_seqscan;
RESET enable_tidscan;
RESET enable_bitmapscan;
RESET enable_hashjoin;
RESET enable_mergejoin;
INSERT INTO crash_failures
SELECT format('%s rows in the heap, %s found through the hash index', (SELECT count(*) FROM crash_rows), found)
  FROM crash_hash
 WHERE found <> (SELECT count(*) FROM crash_rows);

-- Nor must the hash index hold entries that lead nowhere: once VACUUM has removed the entries of dead
-- row versions (and of the rows the crash rolled back), it holds exactly one entry per row. A bucket
-- split leaves the moved entries' old copies in the old bucket until a cleanup that a crash can leave
-- pending (the bucket flagged LH_BUCKET_NEEDS_SPLIT_CLEANUP; scans never return those copies), and VACUUM
-- does that cleanup only in its bulk delete, which it skips when the table has no dead row: one row
-- inserted and rolled back first makes it run (seen once in CI: 279 old copies in one bucket after crash 2).
BEGIN;
INSERT INTO rate_limit_state (limit_name, key, shard, value, ts)
SELECT limit_name, 'crash verify: a dead row for VACUUM', shard, value, ts FROM rate_limit_state LIMIT 1;
ROLLBACK;
VACUUM (INDEX_CLEANUP ON) rate_limit_state;
INSERT INTO crash_failures
SELECT format('%s live entries in the hash index after VACUUM, %s rows', h.live_items, n.rows)
  FROM pgstathashindex('rate_limit_state_lookup') h, (SELECT count(*) AS rows FROM rate_limit_state) n
 WHERE h.live_items <> n.rows;

SELECT format('indexes btree_checked=%s heap_rows=%s found_through_hash=%s hash_entries_after_vacuum=%s',
              (SELECT count(*)
                 FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid JOIN pg_am am ON am.oid = c.relam
                WHERE i.indrelid IN ('rate_limit_state'::regclass, 'rate_limit_config'::regclass)
                  AND am.amname = 'btree'),
              (SELECT count(*) FROM crash_rows), (SELECT found FROM crash_hash),
              (SELECT live_items FROM pgstathashindex('rate_limit_state_lookup')));

SELECT 'failure ' || what FROM crash_failures;
