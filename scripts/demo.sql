-- The demonstration run by scripts/demo.sh (real clock, real waiting).
\set ON_ERROR_STOP on
\pset footer off
\echo '\n--- 1. A limit: 5 requests per 5 seconds (one refills every second), burst of 5'
SELECT rate_limit_define('demo_api', rate => 5, period => '5 seconds');
\echo '\n--- 2. A burst of 7 requests from user1: 5 allowed, then denied with retry_after'
SELECT n AS request, d.allowed, d.remaining, round(extract(epoch FROM d.retry_after)::numeric, 3) AS retry_after_s
  FROM generate_series(1, 7) AS n, LATERAL rate_limit_request('user1' || repeat('', n), 'demo_api') AS d;
\echo '\n--- 3. Wait for retry_after, then the same request succeeds (a refill after waiting)'
SELECT round(extract(epoch FROM retry_after)::numeric, 3) AS sleeping_s, pg_sleep(extract(epoch FROM retry_after))
  FROM rate_limit_check('user1', 'demo_api');
SELECT allowed, remaining, retry_after FROM rate_limit_request('user1', 'demo_api');
\echo '\n--- 4. A rolled-back transaction leaves no trace'
\echo '(rate_limit_check shows what a request would get, consuming nothing)'
SELECT allowed, remaining AS remaining_after_one_more FROM rate_limit_check('user2', 'demo_api');
BEGIN;
SELECT allowed, remaining FROM rate_limit_request('user2', 'demo_api', 5);
ROLLBACK;
SELECT allowed, remaining AS remaining_after_one_more FROM rate_limit_check('user2', 'demo_api');
\echo '\n--- 5. A fixed window: 3 per minute on the minute; the denial says when the next window opens'
SELECT rate_limit_define('demo_window', rate => 3, period => '1 minute', algorithm => 'fixed_window',
                         start => '2026-01-01 00:00:00+00');
SELECT n AS request, d.allowed, d.remaining, d.retry_after
  FROM generate_series(1, 4) AS n, LATERAL rate_limit_request('user1' || repeat('', n), 'demo_window') AS d;
\echo '\n--- 6. A reservation (LLM tokens): take 8 of 10 now, reserve 6 more, then cancel it with a refund'
SELECT rate_limit_define('demo_llm', rate => 10, period => '10 seconds');
SELECT allowed, remaining FROM rate_limit_request('app', 'demo_llm', 8);
SELECT allowed, remaining, retry_after AS run_reserved_work_in FROM rate_limit_request('app', 'demo_llm', 6, reserve => true);
SELECT allowed, remaining FROM rate_limit_refund('app', 'demo_llm', 6);
\echo '\n--- 7. A limit kept in shared memory: it works in a read-only transaction, and one call decides many keys'
SELECT rate_limit_define('demo_ip', rate => 2, period => '1 minute', storage => 'memory');
BEGIN READ ONLY;
SELECT key, position, allowed, remaining
  FROM rate_limit_request_many(ARRAY['10.0.0.1', '10.0.0.2', '10.0.0.1', '10.0.0.1'], 'demo_ip');
COMMIT;
SELECT storage, entries FROM rate_limit_storage ORDER BY storage;
\echo '\n--- The limits and the state behind them (two numbers per key)'
SELECT name, algorithm, rate, period, capacity, max_reserved, start, storage FROM rate_limit_config ORDER BY name;
SELECT limit_name, key, round(value::numeric, 3) AS value, ts FROM rate_limit_state ORDER BY limit_name, key;
