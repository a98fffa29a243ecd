-- Sliding window: the weighted two-window counter. At a fraction f into a window, a key has used its
-- current window's count plus the previous window's count times (1 - f).
SET timezone = 'UTC';
SET datestyle = 'ISO';
SET intervalstyle = 'postgres';
SET extra_float_digits = 0;

-- Cloudflare's example: 50 per minute; 42 in the previous window, 18 in the current one, 15 s into it:
-- 42 * 45/60 + 18 = 49.5 used. A request of 1 is denied, one of 0.5 fits.
SELECT rate_limit_define('cf', rate => 50, period => '1 minute', algorithm => 'sliding_window',
                         start => '2026-01-01 00:00:00+00');
SET pg_ratelimit.fake_now = '2026-01-01 00:00:30';
SELECT allowed, remaining FROM rate_limit_request('ip', 'cf', 42);
-- 5 s into the next window 42 * 55/60 = 38.5 still count: 18 more do not fit yet; 15 s in, they do.
SET pg_ratelimit.fake_now = '2026-01-01 00:01:05';
SELECT allowed, remaining FROM rate_limit_request('ip', 'cf', 18);
SET pg_ratelimit.fake_now = '2026-01-01 00:01:15';
SELECT allowed, remaining FROM rate_limit_request('ip', 'cf', 18);
-- Denied: used falls by 42/60 a second, so 49 is reached in 0.5 / 0.7 s; the key is empty again when the
-- next window ends (00:03:00).
SELECT * FROM rate_limit_check('ip', 'cf');
SELECT allowed, remaining FROM rate_limit_check('ip', 'cf', 0.5);
-- The stored numbers: value is the current window's count, ts the window's start plus the previous
-- window's count in quanta of 1/1199999 units (42 * 1199999 microseconds after 00:01:00).
SELECT value, ts, ts - '2026-01-01 00:01:00+00' AS previous_in_quanta FROM rate_limit_state WHERE limit_name = 'cf';

-- The boundary burst a fixed window allows (10 at the end of a window, 10 more at the start of the next)
-- is gone: at the boundary the 10 used still count in full, and drain over the next window.
SELECT rate_limit_define('fw10', rate => 10, period => '1 minute', algorithm => 'fixed_window',
                         start => '2026-01-01 00:00:00+00');
SELECT rate_limit_define('sw10', rate => 10, period => '1 minute', algorithm => 'sliding_window',
                         start => '2026-01-01 00:00:00+00');
SET pg_ratelimit.fake_now = '2026-01-01 00:00:59';
SELECT l, t.allowed, t.remaining FROM unnest(ARRAY['fw10', 'sw10']) AS l, LATERAL rate_limit_request('k', l, 10) AS t;
SET pg_ratelimit.fake_now = '2026-01-01 00:01:00';
SELECT l, t.* FROM unnest(ARRAY['fw10', 'sw10']) AS l, LATERAL rate_limit_check('k', l, 10) AS t;
SELECT l, t.* FROM unnest(ARRAY['fw10', 'sw10']) AS l, LATERAL rate_limit_check('k', l) AS t;
-- 6 s into the window one unit has drained: exactly then, not a microsecond earlier.
SET pg_ratelimit.fake_now = '2026-01-01 00:01:05.999999';
SELECT allowed FROM rate_limit_check('k', 'sw10');
SET pg_ratelimit.fake_now = '2026-01-01 00:01:06';
SELECT * FROM rate_limit_request('k', 'sw10');

-- Whole units stay exact: 100 per second, 100 admitted and the 101st denied; half a second into the next
-- window exactly 50 more.
SELECT rate_limit_define('hundred', rate => 100, period => '1 second', algorithm => 'sliding_window',
                         start => '2026-01-01 00:00:00+00');
SET pg_ratelimit.fake_now = '2026-01-01 00:00:00.2';
SELECT count(*) FILTER (WHERE t.allowed) AS admitted, count(*) FILTER (WHERE NOT t.allowed) AS denied
  FROM generate_series(1, 101) AS g, LATERAL rate_limit_request('k' || left(g::text, 0), 'hundred') AS t;
SET pg_ratelimit.fake_now = '2026-01-01 00:00:01.5';
SELECT count(*) FILTER (WHERE t.allowed) AS admitted, count(*) FILTER (WHERE NOT t.allowed) AS denied
  FROM generate_series(1, 51) AS g, LATERAL rate_limit_request('k' || left(g::text, 0), 'hundred') AS t;

-- Refunds give back the current window's units first, then the previous window's; never above capacity.
SET pg_ratelimit.fake_now = '2026-01-01 00:01:30';
SELECT rate_limit_reset('k', 'sw10');
SELECT allowed, remaining FROM rate_limit_request('k', 'sw10', 8);   -- previous window: 8
SET pg_ratelimit.fake_now = '2026-01-01 00:02:30';
SELECT allowed, remaining FROM rate_limit_request('k', 'sw10', 2);   -- 8 * 0.5 + 2 = 6 used
SELECT allowed, remaining FROM rate_limit_refund('k', 'sw10', 3);    -- 2 from current, 1 from previous: 3 used
SELECT allowed, remaining FROM rate_limit_refund('k', 'sw10', 10);   -- empty again
SELECT count(*) FROM rate_limit_state WHERE limit_name = 'sw10';

-- Without start, each key's windows are offset by a hash of the key, as for fixed windows.
SELECT rate_limit_define('offset', rate => 2, period => '1 hour', algorithm => 'sliding_window');
SELECT k, t.allowed FROM unnest(ARRAY['a', 'a', 'a', 'b']) WITH ORDINALITY AS u(k, n),
       LATERAL rate_limit_request(k, 'offset') AS t ORDER BY n;

-- A clock stepped back never admits more: a key is evaluated no earlier than its stored window's start,
-- where the previous window counts in full.
SET pg_ratelimit.fake_now = '2026-01-01 00:05:30';
SELECT rate_limit_reset('k', 'sw10');
SELECT allowed, remaining FROM rate_limit_request('k', 'sw10', 10);
SET pg_ratelimit.fake_now = '2026-01-01 00:06:30';
SELECT allowed, remaining FROM rate_limit_request('k', 'sw10');      -- 10 * 0.5 + 1 = 6 used
SET pg_ratelimit.fake_now = '2026-01-01 00:05:10';                   -- evaluated at 00:06:00: 11 used
SELECT allowed, remaining FROM rate_limit_check('k', 'sw10');

-- Shards: each shard a sliding window of rate / shards.
SELECT rate_limit_define('hot', rate => 8, period => '1 second', algorithm => 'sliding_window', shards => 4);
SELECT count(*) FILTER (WHERE t.allowed) AS admitted
  FROM generate_series(1, 12) AS g, LATERAL rate_limit_request('h' || left(g::text, 0), 'hot') AS t;

-- Cleanup deletes keys whose use has drained (two windows after their last), keeps the others.
SET pg_ratelimit.fake_now = '2026-01-01 01:00:00';
SELECT allowed FROM rate_limit_request('fresh', 'cf');
SELECT rate_limit_cleanup('cf');
SELECT key FROM rate_limit_state WHERE limit_name = 'cf';

RESET pg_ratelimit.fake_now;
SELECT rate_limit_drop(name) FROM rate_limit_config WHERE name IN ('cf', 'fw10', 'sw10', 'hundred', 'offset', 'hot');
