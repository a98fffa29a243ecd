-- Live reconfiguration: what a redefinition does to the state keys hold (rate_limit_define's rescale).
SET timezone = 'UTC';
SET datestyle = 'ISO';
SET intervalstyle = 'postgres';
SET extra_float_digits = 0;
SET pg_ratelimit.fake_now = '2026-01-01 00:00:00';
-- The units a key holds now (remaining counts after the check's own unit, when allowed).
CREATE FUNCTION pg_temp.units_left(key text, lim text) RETURNS bigint LANGUAGE sql
    AS $$ SELECT d.remaining + d.allowed::int FROM rate_limit_check(key, lim) AS d $$;

-- proportional (the default): each key keeps its share of the capacity. 40 of 100 left become 80 of 200,
-- a key in debt keeps a proportional debt, a full key (no row) stays full.
SELECT rate_limit_define('api', rate => 100, period => '1 hour', max_reserved => 100);
SELECT allowed, remaining FROM rate_limit_request('used', 'api', 60);
SELECT allowed, remaining FROM rate_limit_request('debt', 'api', 100);
SELECT allowed, remaining, retry_after FROM rate_limit_request('debt', 'api', 50, reserve => true);
SELECT key, value FROM rate_limit_state WHERE limit_name = 'api' ORDER BY key;
SELECT rate_limit_define('api', rate => 200, period => '1 hour', max_reserved => 200);
SELECT key, value FROM rate_limit_state WHERE limit_name = 'api' ORDER BY key;
SELECT key, pg_temp.units_left(key, 'api'), t.retry_after, t.reset_after
  FROM unnest(ARRAY['used', 'debt', 'fresh']) AS key, LATERAL rate_limit_check(key, 'api') AS t;
-- as_is: the numbers stay: 80 units of what is now a capacity of 100, the same debt.
SELECT rate_limit_define('api', rate => 100, period => '1 hour', max_reserved => 200, rescale => 'as_is');
SELECT key, value FROM rate_limit_state WHERE limit_name = 'api' ORDER BY key;
SELECT key, pg_temp.units_left(key, 'api') FROM unnest(ARRAY['used', 'debt']) AS key;
-- A change that leaves the capacity alone (here the period) keeps the numbers under either rule.
SELECT value FROM rate_limit_state WHERE limit_name = 'api' AND key = 'used';
SELECT rate_limit_define('api', rate => 100, period => '2 hours', max_reserved => 200);
SELECT value FROM rate_limit_state WHERE limit_name = 'api' AND key = 'used';
-- reset: every key starts afresh.
SELECT rate_limit_define('api', rate => 100, period => '2 hours', rescale => 'reset');
SELECT count(*) AS rows_after_reset FROM rate_limit_state WHERE limit_name = 'api';

-- Token bucket and GCRA convert exactly: a key keeps its balance across the change, and its decisions.
SELECT rate_limit_define('conv', rate => 10, period => '1 minute');
SELECT allowed, remaining FROM rate_limit_request('k', 'conv', 7);
SET pg_ratelimit.fake_now = '2026-01-01 00:00:30';                    -- 3 + 5 refilled = 8
SELECT rate_limit_define('conv', rate => 10, period => '1 minute', algorithm => 'gcra');
SELECT value, ts FROM rate_limit_state WHERE limit_name = 'conv';     -- TAT: 2 units of 6 s from now
SELECT allowed, remaining, retry_after, reset_after FROM rate_limit_check('k', 'conv', 9);
SELECT rate_limit_define('conv', rate => 20, period => '1 minute', algorithm => 'token_bucket');  -- and doubled
SELECT value, ts FROM rate_limit_state WHERE limit_name = 'conv';     -- 16 of 20
-- Any other algorithm change starts the keys afresh, whatever the rule.
SELECT rate_limit_define('conv', rate => 20, period => '1 minute', algorithm => 'fixed_window', rescale => 'as_is');
SELECT count(*) AS rows_after_algorithm_change FROM rate_limit_state WHERE limit_name = 'conv';

-- Fixed window: the key's units left in its window scale.
SET pg_ratelimit.fake_now = '2026-01-01 00:00:00';
SELECT rate_limit_define('fw', rate => 10, period => '1 hour', algorithm => 'fixed_window', start => '2026-01-01+00');
SELECT allowed, remaining FROM rate_limit_request('k', 'fw', 4);
SELECT rate_limit_define('fw', rate => 5, period => '1 hour', algorithm => 'fixed_window', start => '2026-01-01+00');
SELECT pg_temp.units_left('k', 'fw');

-- Sliding window: both counts scale. 10 per minute, 8 in the previous window and 2 in this one, half way:
-- 8 * 0.5 + 2 = 6 used; at 20 per minute, 12 used of 20.
SELECT rate_limit_define('sw', rate => 10, period => '1 minute', algorithm => 'sliding_window', start => '2026-01-01+00');
SET pg_ratelimit.fake_now = '2026-01-01 00:00:10';
SELECT allowed FROM rate_limit_request('k', 'sw', 8);
SET pg_ratelimit.fake_now = '2026-01-01 00:01:30';
SELECT allowed, remaining FROM rate_limit_request('k', 'sw', 2);
SELECT rate_limit_define('sw', rate => 20, period => '1 minute', algorithm => 'sliding_window', start => '2026-01-01+00');
SELECT allowed, remaining, retry_after FROM rate_limit_check('k', 'sw', 8);
SELECT allowed, remaining, retry_after FROM rate_limit_check('k', 'sw', 9);
-- Another period (another window grid), even as_is: what the key uses now (12) is kept as the new
-- window's count; a sliding window's numbers are always written again for another capacity, period or
-- grid, since they encode the previous window's count relative to those.
SELECT rate_limit_define('sw', rate => 20, period => '2 minutes', algorithm => 'sliding_window', start => '2026-01-01+00',
                         rescale => 'as_is');
SELECT pg_temp.units_left('k', 'sw');
SELECT rate_limit_define('sw', rate => 10, period => '2 minutes', algorithm => 'sliding_window', start => '2026-01-01+00',
                         rescale => 'as_is');
SELECT pg_temp.units_left('k', 'sw');

-- Shards: each shard rescales as a limit of its own; the key's total follows.
SELECT rate_limit_define('hot', rate => 8, period => '1 hour', shards => 4);
SELECT count(*) FILTER (WHERE t.allowed) FROM generate_series(1, 4) AS g,
       LATERAL rate_limit_request('h' || left(g::text, 0), 'hot') AS t;
SELECT rate_limit_define('hot', rate => 16, period => '1 hour', shards => 4);
SELECT pg_temp.units_left('h', 'hot');

-- Unlogged and memory limits rescale too (memory: when the redefinition commits; a rolled-back one
-- changes nothing).
SELECT rate_limit_define('m_' || s, rate => 4, period => '1 hour', storage => s) FROM unnest(ARRAY['unlogged', 'memory']) AS s;
SELECT s, (rate_limit_request('k', 'm_' || s, 3)).remaining FROM unnest(ARRAY['unlogged', 'memory']) AS s;
BEGIN;
SELECT rate_limit_define('m_memory', rate => 40, period => '1 hour', storage => 'memory');
ROLLBACK;
SELECT pg_temp.units_left('k', 'm_memory') AS memory_after_rollback;
SELECT rate_limit_define('m_' || s, rate => 40, period => '1 hour', storage => s) FROM unnest(ARRAY['unlogged', 'memory']) AS s;
SELECT s, pg_temp.units_left('k', 'm_' || s) FROM unnest(ARRAY['unlogged', 'memory']) AS s;

RESET pg_ratelimit.fake_now;
SELECT rate_limit_drop(name) FROM rate_limit_config WHERE name IN ('api', 'conv', 'fw', 'sw', 'hot', 'm_unlogged', 'm_memory');
