-- Hot-key shards: rate_limit_define(..., shards => N) splits each key's allowance over N rows, each a
-- limit of its own with rate, capacity and max_reserved divided by N. Every shard is exact, so a key never
-- admits more than the limit allows; its figures (remaining, retry_after, reset_after) are the key's,
-- across its shards. Which shard serves a call is drawn at random among the best candidates: the figures
-- shown here do not depend on that draw.
SET timezone = 'UTC';
SET datestyle = 'ISO';
SET intervalstyle = 'postgres';
SET pg_ratelimit.fake_now = '2026-01-01 00:00:00';

-- 8 per second over 4 shards: each shard holds 2 and refills 2 per second.
SELECT rate_limit_define('hot', rate => 8, period => '1 second', shards => 4);
SELECT name, rate, capacity, shards FROM rate_limit_config WHERE name = 'hot';
-- The whole allowance, and not one unit more; remaining counts every shard. (reset_after, when the
-- last shard is full again, depends on which shards served until all are empty: shown after.)
SELECT n, (d).allowed, (d).remaining, (d).retry_after
  FROM (SELECT n, rate_limit_request('k', 'hot') AS d FROM generate_series(1, 9) AS n) AS calls;
SELECT allowed, remaining, retry_after, reset_after FROM rate_limit_check('k', 'hot');
SELECT count(*) AS rows, count(DISTINCT shard) AS shards, sum(value) AS units
  FROM rate_limit_state WHERE limit_name = 'hot' AND key = 'k';
-- Half a second later every shard has one unit again: four more.
SET pg_ratelimit.fake_now = '2026-01-01 00:00:00.5';
SELECT allowed, remaining FROM rate_limit_check('k', 'hot');
SELECT count(*) FILTER (WHERE (d).allowed) AS admitted
  FROM (SELECT rate_limit_request('k', 'hot') AS d FROM generate_series(1, 6)) AS calls;

-- A refund goes to one shard (the emptiest) and is capped at that shard's capacity.
SELECT allowed, remaining FROM rate_limit_refund('k', 'hot', 2);
SELECT allowed, remaining FROM rate_limit_refund('k', 'hot', 2);
SELECT allowed, remaining FROM rate_limit_refund('k', 'hot', 2);
SELECT allowed, remaining FROM rate_limit_refund('k', 'hot', 2);
SELECT allowed, remaining, reset_after FROM rate_limit_refund('k', 'hot', 2);
-- A request is served by one shard: more than one shard holds can never succeed.
SELECT rate_limit_request('k', 'hot', 3);
SELECT allowed, remaining FROM rate_limit_request('k', 'hot', 2);

-- Reservations: each shard may go max_reserved / N into debt.
SELECT rate_limit_define('hot_reserve', rate => 4, period => '1 second', shards => 2, max_reserved => 2);
SELECT n, (d).allowed, (d).remaining, (d).retry_after
  FROM (SELECT n, rate_limit_request('k', 'hot_reserve', 2, reserve => true) AS d FROM generate_series(1, 5) AS n) AS c;

-- Fixed windows split the same way.
SELECT rate_limit_define('hot_window', rate => 6, period => '1 minute', algorithm => 'fixed_window',
                         start => '2026-01-01 00:00:00+00', shards => 3);
SELECT count(*) FILTER (WHERE (d).allowed) AS admitted, min((d).retry_after) AS retry_after
  FROM (SELECT rate_limit_request('k', 'hot_window') AS d FROM generate_series(1, 10)) AS calls;

-- Reset and cleanup work on every shard of a key.
SELECT rate_limit_reset('k', 'hot');
SELECT count(*) AS rows_after_reset FROM rate_limit_state WHERE limit_name = 'hot' AND key = 'k';
SELECT allowed, remaining FROM rate_limit_request('k', 'hot');
SET pg_ratelimit.fake_now = '2026-01-01 01:00:00';
SELECT rate_limit_cleanup('hot') AS deleted;
SELECT count(*) AS rows_after_cleanup FROM rate_limit_state WHERE limit_name = 'hot';

-- Changing the number of shards starts the limit's keys afresh (their rows are another split).
SELECT allowed FROM rate_limit_request('k', 'hot_window');
SELECT rate_limit_define('hot_window', rate => 6, period => '1 minute', algorithm => 'fixed_window',
                         start => '2026-01-01 00:00:00+00', shards => 2);
SELECT count(*) AS rows_after_new_split FROM rate_limit_state WHERE limit_name = 'hot_window';
-- Redefining with the same split keeps them.
SELECT allowed FROM rate_limit_request('k', 'hot_window');
SELECT rate_limit_define('hot_window', rate => 12, period => '1 minute', algorithm => 'fixed_window',
                         start => '2026-01-01 00:00:00+00', shards => 2);
SELECT count(*) AS rows_kept FROM rate_limit_state WHERE limit_name = 'hot_window';

-- Bad values.
SELECT rate_limit_define('bad', rate => 1, period => '1 second', shards => 0);
SELECT rate_limit_define('bad', rate => 1, period => '1 second', shards => 257);
SELECT rate_limit_define('bad', rate => 1e-9, period => '1 second', shards => 2);
SELECT rate_limit_define('nulls', rate => 1, period => '1 second', shards => NULL);
SELECT name, shards FROM rate_limit_config WHERE name = 'nulls';

SELECT rate_limit_drop('hot'), rate_limit_drop('hot_reserve'), rate_limit_drop('hot_window'), rate_limit_drop('nulls');
RESET pg_ratelimit.fake_now;
