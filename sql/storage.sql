-- Requests update a key's row in place. Usually the new version stays on its page (a HOT update, no
-- index change); on a full page it moves and needs its own index entry. Pack pages full, update every
-- key repeatedly, and check that each key still has exactly one row, found by lookups.
SET pg_ratelimit.fake_now = '2026-01-01 00:00:00';
ALTER TABLE rate_limit_state SET (fillfactor = 100);
-- An index of the DBA's own: a version that moves needs an entry there too, as UPDATE would make.
CREATE INDEX rate_limit_state_ts ON rate_limit_state (ts);
SELECT rate_limit_define('dense', rate => 1000, period => '1 day');
SELECT count(*) AS keys FROM (SELECT rate_limit_request('key' || i, 'dense') FROM generate_series(1, 2000) AS i) AS calls;

BEGIN;
SELECT count(*) FILTER (WHERE (rate_limit_request('key' || i, 'dense')).allowed) AS admitted
  FROM generate_series(1, 5) AS j, generate_series(1, 2000) AS i;
SELECT n_tup_upd AS updates, n_tup_hot_upd < n_tup_upd AS some_updates_moved_off_page
  FROM pg_stat_xact_user_tables WHERE relid = 'rate_limit_state'::regclass;
COMMIT;

SELECT count(*) AS rows, count(DISTINCT key) AS keys, min(value), max(value)
  FROM rate_limit_state WHERE limit_name = 'dense';
SET enable_seqscan = off;
SET enable_bitmapscan = off;
EXPLAIN (COSTS OFF) SELECT count(*) FROM rate_limit_state WHERE ts = '2026-01-01 00:00:00' AND limit_name || '' = 'dense';
SELECT count(*) AS rows_through_ts_index FROM rate_limit_state WHERE ts = '2026-01-01 00:00:00' AND limit_name || '' = 'dense';
RESET enable_seqscan;
RESET enable_bitmapscan;
DROP INDEX rate_limit_state_ts;
SELECT allowed, remaining FROM rate_limit_check('key1', 'dense');
SELECT allowed, remaining FROM rate_limit_check('key2000', 'dense');

SELECT rate_limit_drop('dense');
ALTER TABLE rate_limit_state SET (fillfactor = 50);
RESET pg_ratelimit.fake_now;

-- Pages are pruned when nearly full, not on every visit: the dead versions that requests leave behind
-- are reclaimed in batches, the updates in between stay on their page (HOT), and the table keeps its
-- size. Each request commits on its own, so that its old version becomes reclaimable. A snapshot held by
-- another session of this database (an autovacuum ANALYZE of this very table, started by the churn itself,
-- on a server that has run other tests) would keep the old versions and fail the counts for a reason that
-- is not the extension's: autovacuum is off on the table meanwhile, and each round starts once no other
-- session of the database holds a snapshot (waiting 30 s at most). A session that takes one during the
-- churn (an autovacuum ANALYZE of another table of the database) can still delay a prune: a few updates
-- then go to another page, so the checks allow 1% of them and two pages more; an extension whose updates
-- were not HOT (an indexed column written) would show none.
ALTER TABLE rate_limit_state SET (autovacuum_enabled = false);
CREATE PROCEDURE wait_for_no_other_snapshot() LANGUAGE plpgsql AS $$
BEGIN
    FOR attempt IN 1 .. 300 LOOP
        EXIT WHEN NOT EXISTS (SELECT 1 FROM pg_stat_activity
                               WHERE datname = current_database() AND pid <> pg_backend_pid()
                                 AND (backend_xmin IS NOT NULL OR backend_xid IS NOT NULL));
        PERFORM pg_sleep(0.1);
    END LOOP;
END
$$;
SELECT rate_limit_define('churn', rate => 1e9, period => '1 second');
SELECT count(*) AS keys FROM (SELECT rate_limit_request('key' || i, 'churn') FROM generate_series(1, 300) AS i) AS calls;
SELECT pg_stat_force_next_flush();
SELECT pg_relation_size('rate_limit_state') AS size_before \gset
SELECT n_tup_upd AS upd_before, n_tup_hot_upd AS hot_before
  FROM pg_stat_user_tables WHERE relid = 'rate_limit_state'::regclass \gset
CREATE PROCEDURE churn(rounds int) LANGUAGE plpgsql AS $$
BEGIN
    FOR r IN 1 .. rounds LOOP
        FOR i IN 1 .. 300 LOOP
            PERFORM rate_limit_request('key' || i, 'churn');
            COMMIT;
        END LOOP;
    END LOOP;
END
$$;
CALL wait_for_no_other_snapshot();
CALL churn(20);
SELECT pg_stat_force_next_flush();
SELECT pg_relation_size('rate_limit_state') <= :size_before + 2 * current_setting('block_size')::int AS size_kept;
SELECT n_tup_upd - :upd_before AS updates, n_tup_hot_upd - :hot_before >= 0.99 * (n_tup_upd - :upd_before) AS hot
  FROM pg_stat_user_tables WHERE relid = 'rate_limit_state'::regclass;
-- Long keys: a row of over 800 bytes still finds room for its next version on its page.
CREATE PROCEDURE churn_long(rounds int) LANGUAGE plpgsql AS $$
BEGIN
    FOR r IN 1 .. rounds LOOP
        FOR i IN 1 .. 60 LOOP
            PERFORM rate_limit_request(repeat('x', 850) || i, 'churn');
            COMMIT;
        END LOOP;
    END LOOP;
END
$$;
CALL churn_long(1);
SELECT pg_stat_force_next_flush();
SELECT pg_relation_size('rate_limit_state') AS size_before \gset
SELECT n_tup_upd AS upd_before, n_tup_hot_upd AS hot_before
  FROM pg_stat_user_tables WHERE relid = 'rate_limit_state'::regclass \gset
CALL wait_for_no_other_snapshot();
CALL churn_long(30);
SELECT pg_stat_force_next_flush();
SELECT pg_relation_size('rate_limit_state') <= :size_before + 2 * current_setting('block_size')::int AS size_kept;
SELECT n_tup_upd - :upd_before AS updates, n_tup_hot_upd - :hot_before >= 0.99 * (n_tup_upd - :upd_before) AS hot
  FROM pg_stat_user_tables WHERE relid = 'rate_limit_state'::regclass;
DROP PROCEDURE churn_long(int);
DROP PROCEDURE wait_for_no_other_snapshot();
ALTER TABLE rate_limit_state RESET (autovacuum_enabled);
SELECT count(*) AS rows, count(DISTINCT key) AS keys FROM rate_limit_state WHERE limit_name = 'churn';
DROP PROCEDURE churn(int);
SELECT rate_limit_drop('churn');
