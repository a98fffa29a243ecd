-- Storage modes: the same limits kept durable, unlogged and in memory decide alike; what differs is
-- where the state lives and whether it follows the transaction. (The server runs with
-- shared_preload_libraries = 'pg_ratelimit', which memory limits need.)
SET pg_ratelimit.fake_now = '2026-01-01 00:00:00+00';
-- The memory table is the server's: entries of other databases (scripts/test-existing.sh runs this on a
-- server in use) are counted from here on, and left out of the figures below.
SELECT entries AS memory_entries_before FROM rate_limit_storage WHERE storage = 'memory' \gset
SELECT rate_limit_define('tb_' || s, 5, '1 minute', storage => s),
       rate_limit_define('fw_' || s, 3, '1 hour', algorithm => 'fixed_window', capacity => 4, storage => s),
       rate_limit_define('sh_' || s, 8, '1 minute', shards => 4, storage => s)
  FROM unnest(ARRAY['durable', 'unlogged', 'memory']) AS s;
SELECT name, storage FROM rate_limit_config WHERE name ~ '^(tb|fw|sh)_' ORDER BY name;

-- One script of calls per mode: requests, a reservation, a refund, a check, a reset, fractional costs,
-- a clock moving on. Every mode must give the same decisions, call for call.
CREATE FUNCTION script(s text) RETURNS TABLE (step int, what text, allowed boolean, remaining bigint,
                                             retry_after interval, reset_after interval)
LANGUAGE plpgsql AS $$
DECLARE
    n int := 0;
    d rate_limit_decision;
BEGIN
    FOR i IN 1..7 LOOP
        d := rate_limit_request('k', 'tb_' || s); n := n + 1;
        step := n; what := 'tb request'; allowed := d.allowed; remaining := d.remaining;
        retry_after := d.retry_after; reset_after := d.reset_after; RETURN NEXT;
    END LOOP;
    d := rate_limit_refund('k', 'tb_' || s, 2); n := n + 1;
    step := n; what := 'tb refund 2'; allowed := d.allowed; remaining := d.remaining;
    retry_after := d.retry_after; reset_after := d.reset_after; RETURN NEXT;
    d := rate_limit_request('k', 'tb_' || s, 3, reserve => true); n := n + 1;
    step := n; what := 'tb reserve 3'; allowed := d.allowed; remaining := d.remaining;
    retry_after := d.retry_after; reset_after := d.reset_after; RETURN NEXT;
    d := rate_limit_check('k', 'tb_' || s); n := n + 1;
    step := n; what := 'tb check'; allowed := d.allowed; remaining := d.remaining;
    retry_after := d.retry_after; reset_after := d.reset_after; RETURN NEXT;
    PERFORM set_config('pg_ratelimit.fake_now', '2026-01-01 00:00:30+00', true);
    d := rate_limit_request('k', 'tb_' || s, 0.5); n := n + 1;
    step := n; what := 'tb 30 s later, cost 0.5'; allowed := d.allowed; remaining := d.remaining;
    retry_after := d.retry_after; reset_after := d.reset_after; RETURN NEXT;
    PERFORM rate_limit_reset('k', 'tb_' || s);
    d := rate_limit_check('k', 'tb_' || s); n := n + 1;
    step := n; what := 'tb after reset'; allowed := d.allowed; remaining := d.remaining;
    retry_after := d.retry_after; reset_after := d.reset_after; RETURN NEXT;
    FOR i IN 1..5 LOOP
        d := rate_limit_request('w', 'fw_' || s); n := n + 1;
        step := n; what := 'fw request'; allowed := d.allowed; remaining := d.remaining;
        retry_after := d.retry_after; reset_after := d.reset_after; RETURN NEXT;
    END LOOP;
    FOR i IN 1..9 LOOP
        -- Which shard serves a call is drawn at random: only the decisions are compared.
        d := rate_limit_request('h', 'sh_' || s); n := n + 1;
        step := n; what := 'sh request'; allowed := d.allowed; remaining := NULL;
        retry_after := NULL; reset_after := NULL; RETURN NEXT;
    END LOOP;
    PERFORM set_config('pg_ratelimit.fake_now', '2026-01-01 00:00:00+00', true);
END $$;

CREATE TABLE runs AS SELECT s AS storage, r.* FROM unnest(ARRAY['durable', 'unlogged', 'memory']) AS s, script(s) AS r;
-- The durable run, then every step where another mode decided differently (none).
SELECT step, what, allowed, remaining, retry_after, reset_after FROM runs WHERE storage = 'durable' ORDER BY step;
SELECT a.storage, a.step, a.what FROM runs a JOIN runs b ON b.storage = 'durable' AND b.step = a.step
 WHERE (a.allowed, a.remaining, a.retry_after, a.reset_after) IS DISTINCT FROM
       (b.allowed, b.remaining, b.retry_after, b.reset_after);
SELECT storage, count(*) AS steps FROM runs GROUP BY storage ORDER BY storage;

-- Where the state lives: a table row for durable and unlogged, none for memory.
SELECT 'durable' AS storage, count(*) AS rows FROM rate_limit_state WHERE limit_name LIKE '%\_durable'
UNION ALL SELECT 'unlogged', count(*) FROM rate_limit_state_unlogged WHERE limit_name LIKE '%\_unlogged'
UNION ALL SELECT 'memory', count(*) FROM rate_limit_state WHERE limit_name LIKE '%\_memory'
UNION ALL SELECT 'memory (unlogged table)', count(*) FROM rate_limit_state_unlogged WHERE limit_name LIKE '%\_memory';
SELECT storage, entries > 0 AS holds_entries FROM rate_limit_storage ORDER BY storage;

-- Transactions: a table's consumption rolls back; memory's does not (documented).
SELECT rate_limit_define('tx_' || s, 2, '1 hour', storage => s) FROM unnest(ARRAY['durable', 'unlogged', 'memory']) AS s;
BEGIN;
SELECT s, (rate_limit_request('k', 'tx_' || s)).allowed FROM unnest(ARRAY['durable', 'unlogged', 'memory']) AS s;
ROLLBACK;
SELECT s, (rate_limit_check('k', 'tx_' || s)).remaining AS remaining_after_rollback
  FROM unnest(ARRAY['durable', 'unlogged', 'memory']) AS s;

-- Read-only transactions: only memory limits can consume there.
BEGIN READ ONLY;
SELECT (rate_limit_request('ro', 'tx_memory')).allowed AS memory_in_read_only;
SELECT (rate_limit_request('ro', 'tx_memory')).remaining AS memory_remaining;
SAVEPOINT s;
SELECT rate_limit_request('ro', 'tx_durable');
ROLLBACK TO s;
SELECT rate_limit_request('ro', 'tx_unlogged');
ROLLBACK;
BEGIN READ ONLY;
SELECT rate_limit_reset('ro', 'tx_memory');
SELECT (rate_limit_check('ro', 'tx_memory')).remaining AS memory_after_reset;
COMMIT;

-- Batches: one row per key, in order, duplicates decided in turn, per-key costs; every mode alike.
SELECT s, key, position, allowed, remaining
  FROM unnest(ARRAY['durable', 'unlogged', 'memory']) AS s,
       rate_limit_request_many(ARRAY['a', 'b', 'a', 'a'], 'tx_' || s, ARRAY[1, 2, 1, NULL]) AS r
 ORDER BY s, position;
SELECT count(*) FROM rate_limit_request_many(ARRAY[]::text[], 'tx_memory');
-- Every element is checked before anything is decided: a bad one consumes nothing, even in memory.
SELECT * FROM rate_limit_request_many(ARRAY['fresh', NULL], 'tx_memory');
SELECT * FROM rate_limit_request_many(ARRAY['fresh', repeat('x', 1025)], 'tx_memory');
SELECT * FROM rate_limit_request_many(ARRAY['fresh', 'fresh2'], 'tx_memory', ARRAY[1, 3]);
SELECT * FROM rate_limit_request_many(ARRAY['fresh', 'fresh2'], 'tx_memory', ARRAY[1]);
SELECT * FROM rate_limit_request_many(ARRAY['fresh'], 'tx_memory', ARRAY['NaN'::float8]);
SELECT * FROM rate_limit_request_many(ARRAY[['a', 'b'], ['c', 'd']], 'tx_memory');
SELECT * FROM rate_limit_request_many(NULL, 'tx_memory');
SELECT * FROM rate_limit_request_many(ARRAY['a'], 'no_such_limit');
SELECT (rate_limit_check('fresh', 'tx_memory')).remaining AS fresh_untouched;

-- Redefinition carries memory state over, as for tables: 1 of 2 left becomes 10 of 20 when the change
-- commits (rescale => 'proportional'; sql/rescale.sql); the keys start afresh when the algorithm, shards
-- or storage change.
SELECT rate_limit_define('tx_memory', 20, '1 hour', storage => 'memory');
SELECT (rate_limit_check('k', 'tx_memory')).remaining AS rescaled_after_rate_change;
SELECT rate_limit_define('tx_memory', 20, '1 hour', algorithm => 'fixed_window', storage => 'memory');
SELECT (rate_limit_check('k', 'tx_memory')).remaining AS fresh_after_algorithm_change;
SELECT rate_limit_request('k', 'tx_memory');
BEGIN;
SELECT rate_limit_define('tx_memory', 20, '1 hour', storage => 'memory');  -- algorithm back: forgotten at commit
ROLLBACK;
SELECT (rate_limit_check('k', 'tx_memory')).remaining AS kept_after_rolled_back_change;
SELECT rate_limit_request('k', 'tx_unlogged');
SELECT rate_limit_define('tx_unlogged', 2, '1 hour', storage => 'durable');
SELECT count(*) AS unlogged_rows_after_storage_change FROM rate_limit_state_unlogged WHERE limit_name = 'tx_unlogged';
SELECT (rate_limit_check('k', 'tx_unlogged')).remaining AS fresh_after_storage_change;
SELECT rate_limit_drop('tx_memory');
SELECT rate_limit_define('tx_memory', 2, '1 hour', algorithm => 'fixed_window', storage => 'memory');
SELECT (rate_limit_check('k', 'tx_memory')).remaining AS fresh_after_drop_and_define;

-- Cleanup removes full entries of every mode.
SET pg_ratelimit.fake_now = '2026-01-03 00:00:00+00';
SELECT rate_limit_cleanup() > 0 AS cleaned;
SELECT storage, entries - CASE storage WHEN 'memory' THEN :memory_entries_before ELSE 0 END AS entries
  FROM rate_limit_storage ORDER BY storage;

-- Bad storage names.
SELECT rate_limit_define('bad', 1, '1 second', storage => 'disk');
SELECT rate_limit_define('bad', 1, '1 second', storage => NULL);  -- NULL: the default
SELECT name, storage FROM rate_limit_config WHERE name = 'bad';
SELECT rate_limit_drop('bad');
UPDATE rate_limit_config SET storage = 'tape' WHERE name = 'default';

SELECT rate_limit_drop(name) FROM rate_limit_config WHERE name ~ '^(tb|fw|sh|tx)_';
DROP FUNCTION script(text);
DROP TABLE runs;
