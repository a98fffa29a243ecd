-- Statistics: rate_limit_stats counts, per limit, the decisions of every function since the last reset
-- (the server runs with shared_preload_libraries = 'pg_ratelimit', which statistics need). Exact numbers
-- after a known sequence of calls; what counts as what; resets, redefinition, drop; the settings.
SET pg_ratelimit.fake_now = '2026-01-01 00:00:00+00';
SHOW pg_ratelimit.stats;
SHOW pg_ratelimit.stats_limits;
SELECT rate_limit_define('st_tb', 3, '1 hour');
SELECT rate_limit_define('st_mem', 3, '1 hour', storage => 'memory');
SELECT rate_limit_define('st_sh', 8, '1 hour', shards => 4);
SELECT rate_limit_stats_reset(n) FROM unnest(ARRAY['st_tb', 'st_mem', 'st_sh']) AS n;

-- The counters of the limits named, in one line each (stats_reset only as "is it recent").
CREATE FUNCTION pg_temp.stats(names text[]) RETURNS TABLE (
    limit_name text, requests bigint, allowed bigint, denied bigint, shadow_denied bigint, checks bigint,
    units_consumed float8, units_reserved float8, units_refunded float8, retries bigint, recent boolean)
LANGUAGE sql AS $$
    SELECT s.limit_name, s.requests, s.allowed, s.denied, s.shadow_denied, s.checks, s.units_consumed,
           s.units_reserved, s.units_refunded, s.retries, s.stats_reset > now() - interval '1 hour'
      FROM rate_limit_stats s WHERE s.limit_name = ANY (names) ORDER BY s.limit_name
$$;
SELECT * FROM pg_temp.stats(ARRAY['st_tb', 'st_mem', 'st_sh']);

-- One script of calls on a durable and a memory limit: 3 admitted (costs 1, 1.5, 0.5), 1 denied, 2 checks,
-- a refund of 1.25, two reservations (2 and 1.5: max_reserved is unlimited, both are admitted).
CREATE FUNCTION pg_temp.script(l text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
    out text := '';
BEGIN
    out := out || (rate_limit_request('a', l)).allowed::text || ' ';
    out := out || (rate_limit_request('a', l, 1.5)).allowed::text || ' ';
    out := out || (rate_limit_request('a', l, 0.5)).allowed::text || ' ';
    out := out || (rate_limit_request('a', l)).allowed::text || ' ';
    out := out || (rate_limit_check('a', l)).allowed::text || ' ';
    out := out || (rate_limit_check('b', l)).allowed::text || ' ';
    out := out || (rate_limit_refund('a', l, 1.25)).allowed::text || ' ';
    out := out || (rate_limit_request('c', l, 2, true)).allowed::text || ' ';
    out := out || (rate_limit_request('c', l, 1.5, true)).allowed::text;
    RETURN out;
END
$$;
SELECT l, pg_temp.script(l) FROM unnest(ARRAY['st_tb', 'st_mem']) AS l ORDER BY l;
SELECT * FROM pg_temp.stats(ARRAY['st_tb', 'st_mem']);

-- Every function that decides counts, once per key: _many per key, throttle and enforce as requests;
-- rate_limit_settle's extra as consumed units, what it gives back as refunded units.
SELECT rate_limit_stats_reset('st_tb');
SELECT count(*) FILTER (WHERE allowed) AS admitted, count(*) AS keys
  FROM rate_limit_request_many(ARRAY['m1', 'm2', 'm1', 'm1', 'm1'], 'st_tb', ARRAY[1, 1, 1, 1, 0.5]);
SELECT limited FROM rate_limit_throttle('t', 'st_tb', 2);
SELECT limited FROM rate_limit_throttle('t', 'st_tb', 2);
SELECT rate_limit_enforce('e', 'st_tb');
DO $$ BEGIN PERFORM rate_limit_enforce('e', 'st_tb', 3); EXCEPTION WHEN SQLSTATE 'RL001' THEN RAISE NOTICE 'RL001'; END $$;
SELECT allowed FROM rate_limit_settle('s', 'st_tb', 1, 2.5);   -- takes 1.5 more
SELECT allowed FROM rate_limit_settle('s', 'st_tb', 2, 0.75);  -- gives 1.25 back
SELECT allowed FROM rate_limit_settle('s', 'st_tb', 1, 1);     -- nothing to do: takes 0
SELECT * FROM pg_temp.stats(ARRAY['st_tb']);

-- A shadow limit admits every request; those it would have denied count in allowed and in shadow_denied,
-- and consume nothing. A check (flagged shadow_denied too) counts in checks only.
SELECT rate_limit_define('st_shadow', 2, '1 hour', shadow => true);
SELECT rate_limit_stats_reset('st_shadow');
SELECT string_agg(format('%s/%s', (d).allowed, (d).shadow_denied), ' ' ORDER BY i) AS decisions
  FROM (SELECT i, rate_limit_request('k', 'st_shadow') AS d FROM generate_series(1, 4) AS i) AS calls;
SELECT allowed, shadow_denied FROM rate_limit_check('k', 'st_shadow');
SELECT * FROM pg_temp.stats(ARRAY['st_shadow']);
SELECT rate_limit_drop('st_shadow');

-- A sharded limit counts the call once, whichever shard decided.
SELECT count(*) FILTER (WHERE (rate_limit_request('k', 'st_sh')).allowed) AS admitted FROM generate_series(1, 10);
SELECT * FROM pg_temp.stats(ARRAY['st_sh']);

-- Not transactional, like pg_stat_*: a rolled-back request is counted (its consumption is undone).
SELECT rate_limit_stats_reset('st_tb');
BEGIN;
SELECT allowed, remaining FROM rate_limit_request('rb', 'st_tb');
ROLLBACK;
SELECT allowed, remaining FROM rate_limit_check('rb', 'st_tb');
SELECT requests, allowed, units_consumed, checks FROM pg_temp.stats(ARRAY['st_tb']);

-- Errors count nothing: a cost beyond capacity, an unknown limit, a bad key are refused before deciding.
SELECT rate_limit_request('a', 'st_tb', 4);
SELECT rate_limit_request(NULL, 'st_tb');
SELECT rate_limit_request('a', 'st_nope');
SELECT requests, allowed, units_consumed, checks FROM pg_temp.stats(ARRAY['st_tb']);
SELECT count(*) AS rows_of_unknown FROM rate_limit_stats WHERE limit_name = 'st_nope';

-- pg_ratelimit.stats = off: nothing is counted meanwhile; the counters keep what they had.
SET pg_ratelimit.stats = off;
SELECT allowed FROM rate_limit_request('off', 'st_tb');
SELECT allowed FROM rate_limit_check('off', 'st_tb');
RESET pg_ratelimit.stats;
SELECT requests, allowed, units_consumed, checks FROM pg_temp.stats(ARRAY['st_tb']);

-- Resets: one limit's row is zeroed and stays (stats_reset moves on); an unknown limit is an error (a typo
-- must not pass for a reset), a name no limit can have too; a defined limit without a row is fine.
SELECT stats_reset AS before_reset FROM rate_limit_stats WHERE limit_name = 'st_tb' \gset
SELECT pg_sleep(0.01);
SELECT rate_limit_stats_reset('st_tb');
SELECT requests, checks, units_refunded, stats_reset > :'before_reset' AS reset_moved
  FROM rate_limit_stats WHERE limit_name = 'st_tb';
SELECT rate_limit_stats_reset('st_nope');
SELECT rate_limit_stats_reset(repeat('n', 129));
SELECT rate_limit_stats_reset('');
-- NULL is an error, never "every limit": resetting the rows a query selects must not wipe the others
-- (the overflow row's limit_name is NULL).
SELECT rate_limit_stats_reset(NULL);
SELECT rate_limit_stats_reset(limit_name) FROM rate_limit_stats WHERE limit_name IS NULL;
SELECT count(*) > 0 AS rows_kept FROM rate_limit_stats;
SELECT rate_limit_define('st_unused', 1, '1 hour');
SELECT rate_limit_stats_reset('st_unused');
SELECT count(*) AS rows_of_unused FROM rate_limit_stats WHERE limit_name = 'st_unused';

-- Counted by name: a redefinition keeps the counters; a dropped limit keeps its row until a reset of all,
-- and a limit defined again under the name continues it.
SELECT allowed FROM rate_limit_request('r', 'st_tb');
SELECT rate_limit_define('st_tb', 10, '1 hour', algorithm => 'fixed_window');
SELECT allowed FROM rate_limit_request('r', 'st_tb');
SELECT requests, allowed FROM pg_temp.stats(ARRAY['st_tb']);
SELECT rate_limit_drop('st_tb');
SELECT requests, allowed FROM pg_temp.stats(ARRAY['st_tb']);
SELECT rate_limit_stats_reset('st_tb');   -- a dropped limit's row can still be zeroed
SELECT requests, allowed FROM pg_temp.stats(ARRAY['st_tb']);
SELECT rate_limit_define('st_tb', 3, '1 hour');
SELECT allowed FROM rate_limit_request('r', 'st_tb');
SELECT requests, allowed FROM pg_temp.stats(ARRAY['st_tb']);
-- A reset of all removes every row of this database (dropped limits' too); counting starts again on use.
SELECT rate_limit_drop('st_unused');
SELECT rate_limit_stats_reset();
SELECT count(*) AS rows_after_reset_all FROM rate_limit_stats;
SELECT allowed FROM rate_limit_request('r2', 'st_tb');
SELECT allowed FROM rate_limit_request('r2', 'st_mem');
SELECT * FROM pg_temp.stats(ARRAY['st_tb', 'st_mem', 'st_sh']);

-- Read-only transactions: a memory limit decides and counts; a durable one is refused and counts nothing.
BEGIN READ ONLY;
SELECT allowed FROM rate_limit_request('ro', 'st_mem');
SELECT allowed FROM rate_limit_request('ro', 'st_tb');
ROLLBACK;
SELECT limit_name, requests FROM pg_temp.stats(ARRAY['st_tb', 'st_mem']);

-- Only superusers may turn counting off (a role could otherwise hide its calls).
CREATE ROLE regress_rl_stats;
SET ROLE regress_rl_stats;
SET pg_ratelimit.stats = off;
SELECT count(*) > 0 AS readable FROM rate_limit_stats;
SELECT rate_limit_stats_reset('st_tb');
RESET ROLE;
DROP ROLE regress_rl_stats;

-- The view's shape.
SELECT attname, format_type(atttypid, atttypmod) FROM pg_attribute
 WHERE attrelid = 'rate_limit_stats'::regclass AND attnum > 0 ORDER BY attnum;

SELECT rate_limit_drop(n) FROM unnest(ARRAY['st_tb', 'st_mem', 'st_sh']) AS n;
SELECT rate_limit_stats_reset();
RESET pg_ratelimit.fake_now;
