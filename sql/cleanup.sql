-- rate_limit_cleanup deletes the rows of keys that are back at full capacity (no row means full, so
-- nothing changes for anyone) and rows of limits removed from rate_limit_config directly. A row goes only
-- once its key has been full for five minutes, so that a server clock stepped back by up to five minutes
-- cannot find the key without its row and refill it again.
SET timezone = 'UTC';
SET datestyle = 'ISO';
SET intervalstyle = 'postgres';
SET pg_ratelimit.fake_now = '2026-01-01 00:00:00';
SELECT rate_limit_define('cl_bucket', rate => 10, period => '1 minute');
SELECT rate_limit_define('cl_window', rate => 5, period => '1 hour', algorithm => 'fixed_window',
                         start => '2026-01-01 00:00:00+00');
SELECT allowed FROM rate_limit_request('empty', 'cl_bucket', 10);
SELECT allowed FROM rate_limit_request('one_used', 'cl_bucket');
SELECT allowed FROM rate_limit_request('in_debt', 'cl_bucket', 10);
SELECT allowed FROM rate_limit_request('in_debt', 'cl_bucket', 5, reserve => true);
SELECT allowed FROM rate_limit_request('window', 'cl_window', 5);

-- Nothing is full yet.
SELECT rate_limit_cleanup();
-- Six seconds later 'one_used' has its unit back, but only five minutes on does its row go.
SET pg_ratelimit.fake_now = '2026-01-01 00:00:06';
SELECT rate_limit_cleanup('cl_bucket');
SET pg_ratelimit.fake_now = '2026-01-01 00:05:05.999999';
SELECT rate_limit_cleanup('cl_bucket');
SET pg_ratelimit.fake_now = '2026-01-01 00:05:06';
SELECT rate_limit_cleanup('cl_bucket');
SELECT limit_name, key FROM rate_limit_state WHERE limit_name LIKE 'cl\_%' ORDER BY 1, 2;
-- 'empty' is full a minute on, 'in_debt' still owes; the window key refills only at 01:00.
SET pg_ratelimit.fake_now = '2026-01-01 00:06:00';
SELECT rate_limit_cleanup();
SELECT limit_name, key FROM rate_limit_state WHERE limit_name LIKE 'cl\_%' ORDER BY 1, 2;
SET pg_ratelimit.fake_now = '2026-01-01 01:05:00';
SELECT rate_limit_cleanup();
SELECT limit_name, key FROM rate_limit_state WHERE limit_name LIKE 'cl\_%' ORDER BY 1, 2;
-- Deleted rows were equivalent to full keys: the next request sees a full key.
SELECT allowed, remaining FROM rate_limit_request('empty', 'cl_bucket');

-- A row stored later than the clock (it stepped back) stays, full or not: it holds the key's time.
SET pg_ratelimit.fake_now = '2026-01-02 00:00:00';
SELECT allowed FROM rate_limit_request('ahead', 'cl_bucket');
SELECT allowed FROM rate_limit_refund('ahead', 'cl_bucket');
SET pg_ratelimit.fake_now = '2026-01-01 23:00:00';
SELECT rate_limit_cleanup('cl_bucket');
SELECT limit_name, key FROM rate_limit_state WHERE key = 'ahead';
SET pg_ratelimit.fake_now = '2026-01-02 00:05:00';
SELECT rate_limit_cleanup('cl_bucket');
SELECT count(*) AS ahead_rows FROM rate_limit_state WHERE key = 'ahead';

-- Rows of a limit deleted from the table directly are orphans; cleanup of all limits removes them.
SELECT rate_limit_define('cl_orphan', rate => 1, period => '1 day');
SELECT allowed FROM rate_limit_request('k', 'cl_orphan');
DELETE FROM rate_limit_config WHERE name = 'cl_orphan';
SELECT rate_limit_cleanup();
SELECT count(*) AS orphans FROM rate_limit_state WHERE limit_name = 'cl_orphan';

SELECT rate_limit_cleanup('no_such_limit');
SELECT rate_limit_cleanup(NULL::text) >= 0 AS null_means_all;
SELECT rate_limit_drop('cl_bucket'), rate_limit_drop('cl_window');

-- Bounded calls: max_rows examines at most that many rows, ending at a key boundary (a key's shards
-- together), and the next bounded call of the session continues after the last key examined; once the
-- pass has reached the end the next one starts over. cl_many: 10 keys, every other one full; cl_sharded:
-- 3 keys of 4 shards each (one request per key touches one shard, so a key has one row per shard it used).
SET pg_ratelimit.fake_now = '2026-02-01 00:00:00';
SELECT rate_limit_define('cl_many', rate => 1, period => '1 hour', capacity => 10);
SELECT rate_limit_define('cl_sharded', rate => 4, period => '1 second', shards => 4);
SELECT count(*) FILTER (WHERE (rate_limit_request(format('k%s', i), 'cl_many', 10)).allowed) AS emptied
  FROM generate_series(0, 9) AS i;
SELECT count(*) FILTER (WHERE (rate_limit_request(format('s%s', i % 3), 'cl_sharded')).allowed) AS admitted
  FROM generate_series(0, 11) AS i;
SELECT key, count(*) AS shards FROM rate_limit_state WHERE limit_name = 'cl_sharded' GROUP BY key ORDER BY key;
-- A day on every key is full; then the even keys of cl_many are used again (not full any more).
SET pg_ratelimit.fake_now = '2026-02-02 00:00:00';
SELECT count(*) FILTER (WHERE (rate_limit_request(format('k%s', i), 'cl_many', 5)).allowed) AS used_again
  FROM generate_series(0, 9, 2) AS i;
SET pg_ratelimit.fake_now = '2026-02-02 00:10:00';
-- Four bounded calls of 3 rows walk cl_many's 10 keys (k0, k1, k2 | k3, k4, k5 | k6, k7, k8 | k9), and
-- delete the odd ones.
SELECT rate_limit_cleanup('cl_many', max_rows => 3) AS deleted;
SELECT array_agg(key ORDER BY key) AS left_keys FROM rate_limit_state WHERE limit_name = 'cl_many';
SELECT rate_limit_cleanup('cl_many', max_rows => 3) AS deleted;
SELECT array_agg(key ORDER BY key) AS left_keys FROM rate_limit_state WHERE limit_name = 'cl_many';
SELECT rate_limit_cleanup('cl_many', max_rows => 3) AS deleted;
SELECT rate_limit_cleanup('cl_many', max_rows => 3) AS deleted;
SELECT array_agg(key ORDER BY key) AS left_keys FROM rate_limit_state WHERE limit_name = 'cl_many';
-- The pass ended: the next bounded call starts over. Ten hours on the even keys are full again: a pass
-- from k0 deletes them, 3 rows a call.
SET pg_ratelimit.fake_now = '2026-02-02 10:10:00';
SELECT rate_limit_cleanup('cl_many', max_rows => 3) AS deleted;
SELECT array_agg(key ORDER BY key) AS left_keys FROM rate_limit_state WHERE limit_name = 'cl_many';
SELECT rate_limit_cleanup('cl_many', max_rows => 3) AS deleted;
SELECT rate_limit_cleanup('cl_many', max_rows => 3) AS deleted;
-- One row examined ends only after the key's last shard: each call deletes one whole key.
SELECT rate_limit_cleanup('cl_sharded', max_rows => 1) AS deleted,
       (SELECT array_agg(DISTINCT key ORDER BY key) FROM rate_limit_state WHERE limit_name = 'cl_sharded') AS left_keys;
SELECT rate_limit_cleanup('cl_sharded', max_rows => 1) AS deleted,
       (SELECT array_agg(DISTINCT key ORDER BY key) FROM rate_limit_state WHERE limit_name = 'cl_sharded') AS left_keys;
-- A position belongs to its limit_name argument (the session keeps one): a bounded call of all limits
-- starts a pass of its own, from the first limit.
SELECT rate_limit_cleanup(max_rows => 1000) >= 1 AS all_limits_deleted_s2;
SELECT count(*) AS sharded_rows FROM rate_limit_state WHERE limit_name = 'cl_sharded';

-- Orphans, bounded: rows of a limit deleted by hand go at most max_rows per call, in the pass of all
-- limits (after the limits, each of which counts as at least one row: a call visits at most max_rows).
SELECT rate_limit_define('cl_gone', rate => 1, period => '1 day');
SELECT count(*) FILTER (WHERE (rate_limit_request(format('g%s', i), 'cl_gone')).allowed) AS admitted
  FROM generate_series(1, 5) AS i;
DELETE FROM rate_limit_config WHERE name = 'cl_gone';
SELECT max(deleted) AS most_in_one_call, count(*) FILTER (WHERE deleted > 0) > 1 AS over_several_calls
  FROM (SELECT rate_limit_cleanup(max_rows => 2) AS deleted FROM generate_series(1, 20)) AS calls;
SELECT count(*) AS orphans FROM rate_limit_state WHERE limit_name = 'cl_gone';

-- Memory limits have no rows: a bounded pass sweeps a memory limit's full entries when it reaches the
-- limit, whatever max_rows (it counts as one row examined), and once per pass.
SET pg_ratelimit.fake_now = '2026-02-02 12:00:00';
SELECT rate_limit_define('cl_memory', rate => 1, period => '1 second', storage => 'memory');
SELECT count(*) FILTER (WHERE (rate_limit_request(format('m%s', i), 'cl_memory')).allowed) AS admitted
  FROM generate_series(1, 3) AS i;
SET pg_ratelimit.fake_now = '2026-02-02 12:10:00';
SELECT rate_limit_cleanup('cl_memory', max_rows => 1) AS swept;
SELECT rate_limit_cleanup('cl_memory', max_rows => 1) AS swept_again;
SELECT rate_limit_drop('cl_memory');

-- rate_limit_cleanup_batches: one complete pass in committed batches of batch_rows rows; returns the count.
SET pg_ratelimit.fake_now = '2026-02-03 00:00:00';
SELECT count(*) FILTER (WHERE (rate_limit_request(format('b%s', i), 'cl_many')).allowed) AS admitted
  FROM generate_series(1, 25) AS i;
SET pg_ratelimit.fake_now = '2026-02-03 01:10:00';
CALL rate_limit_cleanup_batches('cl_many', batch_rows => 4);
SELECT count(*) AS cl_many_rows FROM rate_limit_state WHERE limit_name = 'cl_many';
CALL rate_limit_cleanup_batches();
CALL rate_limit_cleanup_batches('no_such_limit');
-- It commits, so it cannot run inside a transaction block; and batch_rows must be positive.
BEGIN;
CALL rate_limit_cleanup_batches();
ROLLBACK;
CALL rate_limit_cleanup_batches(batch_rows => NULL);
CALL rate_limit_cleanup_batches(batch_rows => 0);
CALL rate_limit_cleanup_batches(batch_rows => -1);
SELECT rate_limit_cleanup(max_rows => 0);
SELECT rate_limit_cleanup('cl_many', max_rows => -9223372036854775808);
SELECT rate_limit_cleanup('cl_many', max_rows => 9223372036854775807) AS huge_bound;
SELECT rate_limit_drop('cl_many'), rate_limit_drop('cl_sharded');
RESET pg_ratelimit.fake_now;
