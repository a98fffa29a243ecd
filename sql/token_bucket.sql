-- Token bucket: units refill continuously at rate / period, up to capacity.
SET timezone = 'UTC';
SET datestyle = 'ISO';
SET intervalstyle = 'postgres';

-- Requests for one key at start, start + step, ... (n of them), each with the clock pinned there.
CREATE FUNCTION pg_temp.requests(key text, limit_name text, start timestamptz, step interval, n int,
                                 cost float8 DEFAULT 1)
RETURNS TABLE (at time, allowed boolean, remaining bigint, retry_after interval, reset_after interval)
LANGUAGE plpgsql AS $$
BEGIN
    FOR i IN 0 .. n - 1 LOOP
        PERFORM set_config('pg_ratelimit.fake_now', (start + i * step)::text, false);
        at := (start + i * step)::time;
        SELECT d.allowed, d.remaining, d.retry_after, d.reset_after
          INTO allowed, remaining, retry_after, reset_after
          FROM rate_limit_request(key, limit_name, cost) d;
        RETURN NEXT;
    END LOOP;
END
$$;

-- The seed article's bucket: refill one per second, ten seconds of burst. Taking one every 100 ms
-- leaves 9, 8, ... 0 whole units; the refill of 0.1 per step makes the 11th call, one second in,
-- succeed too; the 12th is denied for the 0.9 s its unit still needs.
SELECT rate_limit_define('seed', rate => 10, period => '10 seconds');
SELECT * FROM pg_temp.requests('user1', 'seed', '2026-01-01 00:00:00', '100 ms', 12);
-- Four seconds later four units are back: one call leaves three.
SELECT * FROM pg_temp.requests('user1', 'seed', '2026-01-01 00:00:05.1', '0', 1);

-- Convex: 10 per minute; 5 used are fully restored after 30 s, one every 6 s.
SELECT rate_limit_define('per_minute', rate => 10, period => '1 minute');
SELECT * FROM pg_temp.requests('user1', 'per_minute', '2026-01-01 00:00:00', '0', 1, cost => 5);
SET pg_ratelimit.fake_now = '2026-01-01 00:00:06';
SELECT * FROM rate_limit_check('user1', 'per_minute', 6);
SET pg_ratelimit.fake_now = '2026-01-01 00:00:30';
SELECT * FROM rate_limit_check('user1', 'per_minute', 10);

-- Capacity below rate: 60 per hour, at most 10 saved up. After 15 idle minutes only 10 are available.
SELECT rate_limit_define('hourly', rate => 60, period => '1 hour', capacity => 10);
SELECT * FROM pg_temp.requests('user1', 'hourly', '2026-01-01 00:00:00', '0', 1, cost => 10);
SET pg_ratelimit.fake_now = '2026-01-01 00:15:00';
SELECT * FROM rate_limit_check('user1', 'hourly', 10);
SELECT * FROM rate_limit_check('user1', 'hourly', 11);

-- Capacity above rate (burst): 1 per second, 5 saved up.
SELECT rate_limit_define('burst', rate => 1, period => '1 second', capacity => 5);
SELECT * FROM pg_temp.requests('user1', 'burst', '2026-01-01 00:00:00', '0', 6);

-- Fractional costs: ten calls of 0.1 from a bucket holding 1 admit exactly ten.
SELECT rate_limit_define('fractional', rate => 1, period => '1 day');
SELECT count(*) FILTER (WHERE allowed) AS admitted
  FROM pg_temp.requests('user1', 'fractional', '2026-01-01 00:00:00', '0', 11, cost => 0.1);

-- A cost equal to capacity succeeds on a full key; a very long idle never exceeds capacity.
SELECT * FROM pg_temp.requests('user1', 'burst', '2036-01-01 00:00:00', '0', 1, cost => 5);
SELECT * FROM pg_temp.requests('user1', 'burst', '2136-01-01 00:00:00', '0', 1, cost => 5);

SELECT limit_name, key, value, ts FROM rate_limit_state ORDER BY limit_name, key;

SELECT rate_limit_drop(name) FROM unnest(ARRAY['seed', 'per_minute', 'hourly', 'burst', 'fractional']) AS name;
SELECT count(*) AS keys_left FROM rate_limit_state;
RESET pg_ratelimit.fake_now;
