-- Jitter: denied calls' retry_after spread at random over [true wait, true wait + jitter], so that the
-- clients denied together do not all come back at the same instant. Never shorter than the true wait.
SET timezone = 'UTC';
SET intervalstyle = 'postgres';

SELECT rate_limit_define('spread', rate => 1, period => '1 minute', jitter => '10 seconds');
SELECT rate_limit_define('exact', rate => 1, period => '1 minute');
SELECT name, jitter FROM rate_limit_config WHERE name IN ('spread', 'exact') ORDER BY name;
SET pg_ratelimit.fake_now = '2026-01-01 00:00:00';
-- Allowed calls are not delayed.
SELECT allowed, retry_after FROM rate_limit_request('k', 'spread');
SELECT allowed, retry_after FROM rate_limit_request('k', 'exact');
-- 500 denied checks and requests: every retry_after within [60 s, 70 s], spread over that range (in
-- each tenth of it), where the limit without jitter answers 60 s every time.
SELECT min(t.retry_after) >= interval '60 seconds' AS never_early,
       max(t.retry_after) <= interval '70 seconds' AS within_jitter,
       count(DISTINCT least(width_bucket(extract(epoch FROM t.retry_after), 60, 70, 10), 10)) AS tenths_hit,
       count(*) FILTER (WHERE NOT t.allowed) AS denied
  FROM generate_series(1, 500) AS g,
       LATERAL (SELECT * FROM rate_limit_check('k' || left(g::text, 0), 'spread')
                UNION ALL SELECT * FROM rate_limit_request('k' || left(g::text, 0), 'spread')) AS t;
SELECT count(DISTINCT t.retry_after) AS distinct_waits, min(t.retry_after)
  FROM generate_series(1, 100) AS g, LATERAL rate_limit_check('k' || left(g::text, 0), 'exact') AS t;
-- rate_limit_request_many spreads each denied key too; reset_after is never jittered.
SELECT count(*) FILTER (WHERE retry_after BETWEEN interval '60 seconds' AND interval '70 seconds') AS spread,
       count(DISTINCT reset_after) AS reset_afters
  FROM rate_limit_request_many(array_fill('k'::text, ARRAY[50]), 'spread');
-- Redefining without jitter turns it off.
SELECT rate_limit_define('spread', rate => 1, period => '1 minute');
SELECT jitter FROM rate_limit_config WHERE name = 'spread';
SELECT retry_after FROM rate_limit_check('k', 'spread');

RESET pg_ratelimit.fake_now;
SELECT rate_limit_drop('spread'), rate_limit_drop('exact');
