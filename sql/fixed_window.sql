-- Fixed window: rate units per window, windows start at start + k * period.
SET timezone = 'UTC';
SET datestyle = 'ISO';
SET intervalstyle = 'postgres';

-- The SQLite article: 5 messages per 2 minutes; the 6th is denied until the next window.
SELECT rate_limit_define('send_message', rate => 5, period => '2 minutes', algorithm => 'fixed_window',
                         start => '2026-01-01 00:00:00+00');
SET pg_ratelimit.fake_now = '2026-01-01 00:00:30';
SELECT * FROM rate_limit_request('user1', 'send_message', 4);
SELECT * FROM rate_limit_request('user1', 'send_message');
SELECT * FROM rate_limit_request('user1', 'send_message');
-- One microsecond before the window ends: still denied; at the boundary: 5 new units.
SET pg_ratelimit.fake_now = '2026-01-01 00:01:59.999999';
SELECT * FROM rate_limit_request('user1', 'send_message');
SET pg_ratelimit.fake_now = '2026-01-01 00:02:00';
SELECT * FROM rate_limit_request('user1', 'send_message');
-- Unused units do not roll over when capacity = rate: after three idle windows, still 5.
SET pg_ratelimit.fake_now = '2026-01-01 00:08:00';
SELECT * FROM rate_limit_check('user1', 'send_message', 5);
SELECT * FROM rate_limit_check('user1', 'send_message', 6);

-- Rollover: 100 per hour, up to 250 saved. Windows on the hour.
SELECT rate_limit_define('api_hourly', rate => 100, period => '1 hour', algorithm => 'fixed_window',
                         capacity => 250, start => '2026-01-01 00:00:00+00');
SET pg_ratelimit.fake_now = '2026-01-01 00:10:00';
SELECT * FROM rate_limit_request('team1', 'api_hourly', 250);
SELECT * FROM rate_limit_request('team1', 'api_hourly');
-- Denied for 120 units: two windows are needed.
SELECT * FROM rate_limit_check('team1', 'api_hourly', 120);
SET pg_ratelimit.fake_now = '2026-01-01 01:00:00';
SELECT * FROM rate_limit_request('team1', 'api_hourly', 60);
-- 40 unused carry over: 140 at 02:00, 240 at 03:00, capped at 250 from 04:00.
SET pg_ratelimit.fake_now = '2026-01-01 03:30:00';
SELECT * FROM rate_limit_check('team1', 'api_hourly', 240);
SELECT * FROM rate_limit_check('team1', 'api_hourly', 241);
SET pg_ratelimit.fake_now = '2026-01-01 09:00:00';
SELECT * FROM rate_limit_check('team1', 'api_hourly', 250);

-- A start in the future works too: the grid extends backwards from it.
SELECT rate_limit_define('future_grid', rate => 1, period => '10 minutes', algorithm => 'fixed_window',
                         start => '2030-01-01 00:05:00+00');
SET pg_ratelimit.fake_now = '2026-01-01 00:00:00';
SELECT * FROM rate_limit_request('user1', 'future_grid');
SELECT * FROM rate_limit_request('user1', 'future_grid');

-- Without start, each key gets its own offset within the period (from a hash of the key), so keys
-- do not all refill at the same instant; the offset of a key is stable.
SELECT rate_limit_define('jittered', rate => 1, period => '1 hour', algorithm => 'fixed_window');
SET pg_ratelimit.fake_now = '2026-01-01 00:00:00';
SELECT key, (rate_limit_request(key, 'jittered')).reset_after AS first_refill
  FROM unnest(ARRAY['alice', 'bob', 'carol', 'dave']) AS key;
SET pg_ratelimit.fake_now = '2026-01-01 00:20:00';
SELECT key, (rate_limit_check(key, 'jittered')).retry_after AS next_refill
  FROM unnest(ARRAY['alice', 'bob', 'carol', 'dave']) AS key;
SELECT count(DISTINCT (rate_limit_request(key, 'jittered')).reset_after) AS distinct_offsets
  FROM (SELECT 'user' || i AS key FROM generate_series(1, 50) i) AS keys;

SELECT limit_name, key, value, ts FROM rate_limit_state WHERE limit_name <> 'jittered' ORDER BY limit_name, key;
SELECT rate_limit_drop(name) FROM unnest(ARRAY['send_message', 'api_hourly', 'future_grid', 'jittered']) AS name;
RESET pg_ratelimit.fake_now;
