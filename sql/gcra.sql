-- GCRA: the token bucket's decisions, kept as one instant per key (the theoretical arrival time), and
-- rate_limit_throttle, redis-cell's CL.THROTTLE reply.
SET timezone = 'UTC';
SET datestyle = 'ISO';
SET intervalstyle = 'postgres';
SET extra_float_digits = 0;

-- redis-cell's example, CL.THROTTLE user123 15 30 60: 30 per 60 s (one every 2 s), a burst of 15 + 1.
SELECT rate_limit_define('cell', rate => 30, period => '60 seconds', algorithm => 'gcra', capacity => 16);
SELECT rate_limit_define('cell_tb', rate => 30, period => '60 seconds', algorithm => 'token_bucket', capacity => 16);
SET pg_ratelimit.fake_now = '2026-01-01 00:00:00';
-- 16 allowed at once, the 17th limited for 2 s; reset_after counts until the key is full again.
SELECT g, t.* FROM generate_series(1, 17) AS g, LATERAL rate_limit_throttle('user123' || left(g::text, 0), 'cell') AS t;
-- The same sequence on a token bucket of the same rate and capacity decides alike.
SELECT g, t.* FROM generate_series(1, 17) AS g, LATERAL rate_limit_throttle('user123' || left(g::text, 0), 'cell_tb') AS t;
-- The stored state is the theoretical arrival time: 16 units of 2 s after now.
SELECT limit_name, key, value, ts FROM rate_limit_state WHERE limit_name = 'cell';
-- 1 s later: still limited, for 1 s; at 2 s one unit is back. Both algorithms alike again.
SET pg_ratelimit.fake_now = '2026-01-01 00:00:01';
SELECT l, t.* FROM unnest(ARRAY['cell', 'cell_tb']) AS l, LATERAL rate_limit_throttle('user123', l) AS t;
SET pg_ratelimit.fake_now = '2026-01-01 00:00:02';
SELECT l, t.* FROM unnest(ARRAY['cell', 'cell_tb']) AS l, LATERAL rate_limit_throttle('user123', l) AS t;
SELECT l, t.* FROM unnest(ARRAY['cell', 'cell_tb']) AS l, LATERAL rate_limit_throttle('user123', l) AS t;
-- A cost (redis-cell's quantity) of 5 needs 10 s of refill.
SELECT l, t.* FROM unnest(ARRAY['cell', 'cell_tb']) AS l, LATERAL rate_limit_throttle('user123', l, 5) AS t;
SELECT l, t.* FROM unnest(ARRAY['cell', 'cell_tb']) AS l, LATERAL rate_limit_check('user123', l, 5) AS t;

-- Fractional rates keep sub-microsecond precision: 3 per second, 3 requests, then exactly one every
-- 333333.33 us. Three more at 1 s are all allowed (the fractions add up to exactly 1 s).
SELECT rate_limit_define('thirds', rate => 3, period => '1 second', algorithm => 'gcra');
SET pg_ratelimit.fake_now = '2026-01-01 00:00:00';
SELECT g, t.allowed, t.remaining FROM generate_series(1, 4) AS g,
       LATERAL rate_limit_request('k' || left(g::text, 0), 'thirds') AS t;
SET pg_ratelimit.fake_now = '2026-01-01 00:00:01';
SELECT g, t.allowed, t.remaining FROM generate_series(1, 4) AS g,
       LATERAL rate_limit_request('k' || left(g::text, 0), 'thirds') AS t;

-- Reservations and refunds work as on a token bucket: a reservation takes the key into debt (the TAT
-- beyond now + capacity * T), a refund brings it back.
SELECT rate_limit_define('llm', rate => 10, period => '1 minute', algorithm => 'gcra', max_reserved => 20);
SET pg_ratelimit.fake_now = '2026-01-01 00:00:00';
SELECT * FROM rate_limit_request('team', 'llm', 10);
SELECT * FROM rate_limit_request('team', 'llm', 8, reserve => true);
SELECT * FROM rate_limit_check('team', 'llm');
SELECT * FROM rate_limit_refund('team', 'llm', 8);
SELECT * FROM rate_limit_refund('team', 'llm', 10);

-- A clock stepped back makes a GCRA key poorer, never richer: 2 units taken at 00:01:00, then the clock
-- reads 00:00:30: the key holds 8 - 5 = 3 units (remaining 2 after the check's one), where a token bucket
-- would hold 8 (GCRA counts back from the instant it would be full again).
SELECT rate_limit_define('back', rate => 10, period => '1 minute', algorithm => 'gcra');
SET pg_ratelimit.fake_now = '2026-01-01 00:01:00';
SELECT allowed, remaining FROM rate_limit_request('k', 'back', 2);
SET pg_ratelimit.fake_now = '2026-01-01 00:00:30';
SELECT allowed, remaining, retry_after, reset_after FROM rate_limit_check('k', 'back');
-- Back at 00:01:00 it holds what it held.
SET pg_ratelimit.fake_now = '2026-01-01 00:01:00';
SELECT allowed, remaining FROM rate_limit_check('k', 'back');

-- Shards split a GCRA key like a token bucket key.
SELECT rate_limit_define('hot', rate => 8, period => '1 second', algorithm => 'gcra', shards => 4);
SELECT count(*) FILTER (WHERE t.allowed) AS admitted
  FROM generate_series(1, 12) AS g, LATERAL rate_limit_request('h' || left(g::text, 0), 'hot') AS t;

-- Cleanup removes keys back at full capacity (the TAT passed), keeps the others.
SET pg_ratelimit.fake_now = '2026-01-01 01:00:00';
SELECT rate_limit_cleanup('cell');
SELECT count(*) FROM rate_limit_state WHERE limit_name = 'cell';

RESET pg_ratelimit.fake_now;
SELECT rate_limit_drop(name) FROM rate_limit_config WHERE name IN ('cell', 'cell_tb', 'thirds', 'llm', 'back', 'hot');
