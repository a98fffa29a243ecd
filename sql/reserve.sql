-- rate_limit_reserve: a reservation only when its units are due within max_wait; otherwise a denial that
-- consumes nothing, whose retry_after is when such a reservation would fit. The clock is pinned.
SET pg_ratelimit.fake_now = '2026-01-01 00:00:00+00';
SELECT rate_limit_define('reserve_tb', rate => 5, period => '1 second', capacity => 2);

-- Full: allowed at once, like a request.
SELECT * FROM rate_limit_reserve('k', 'reserve_tb', 2, '0');
-- Empty: one unit is due in 200 ms. Within 100 ms: denied, nothing taken, and retry_after is when a
-- reservation would be due within 100 ms (100 ms from now).
SELECT * FROM rate_limit_reserve('k', 'reserve_tb', 1, '100 ms');
SELECT remaining, retry_after FROM rate_limit_check('k', 'reserve_tb', 1);
-- Within 200 ms: reserved, act in 200 ms.
SELECT * FROM rate_limit_reserve('k', 'reserve_tb', 1, '200 ms');
-- The next unit is due in 400 ms: a bound of 300 ms is denied until 100 ms from now...
SELECT allowed, retry_after FROM rate_limit_reserve('k', 'reserve_tb', 1, '300 ms');
-- ... and admitted then.
SET pg_ratelimit.fake_now = '2026-01-01 00:00:00.1+00';
SELECT allowed, retry_after FROM rate_limit_reserve('k', 'reserve_tb', 1, '300 ms');
-- NULL: no bound (rate_limit_request with reserve => true).
SELECT allowed, retry_after FROM rate_limit_reserve('k', 'reserve_tb', 1);

-- max_reserved bounds the debt whatever the wait: denied, and retry_after is when the debt leaves room.
SELECT rate_limit_define('reserve_capped', rate => 10, period => '1 second', capacity => 10, max_reserved => 5);
SELECT allowed FROM rate_limit_request('k', 'reserve_capped', 10);
SELECT allowed, retry_after FROM rate_limit_reserve('k', 'reserve_capped', 5, '1 hour');
SELECT allowed, retry_after FROM rate_limit_reserve('k', 'reserve_capped', 1, '1 hour');
SELECT allowed, retry_after FROM rate_limit_reserve('k', 'reserve_capped', 5, '1 hour');

-- A fixed window: the next window opens in 1 s (start pins the grid).
SELECT rate_limit_define('reserve_fw', rate => 3, period => '1 second', algorithm => 'fixed_window',
                         start => '2026-01-01 00:00:00+00');
SELECT allowed FROM rate_limit_request('k', 'reserve_fw', 3);
SELECT allowed, retry_after FROM rate_limit_reserve('k', 'reserve_fw', 1, '500 ms');
SELECT allowed, retry_after FROM rate_limit_reserve('k', 'reserve_fw', 1, '1 second');

-- A shadow limit never makes the caller wait or fail.
SELECT rate_limit_define('reserve_shadow', rate => 1, period => '1 hour', shadow => true);
SELECT allowed FROM rate_limit_request('k', 'reserve_shadow');
SELECT * FROM rate_limit_reserve('k', 'reserve_shadow', 1, '1 second');

-- Bad input.
SELECT * FROM rate_limit_reserve('k', 'reserve_tb', 1, '-1 ms');
SELECT * FROM rate_limit_reserve('k', 'reserve_tb', 1, '1 month');
SELECT * FROM rate_limit_reserve('k', 'reserve_tb', 3, '1 second');
SELECT * FROM rate_limit_reserve(NULL, 'reserve_tb', 1, '1 second');
SELECT * FROM rate_limit_reserve('k', 'no_such_limit', 1, '1 second');
-- A concurrency limit takes leases, not reservations.
SELECT rate_limit_define('reserve_leases', rate => 2, period => '1 hour', algorithm => 'concurrency');
SELECT * FROM rate_limit_reserve('k', 'reserve_leases', 1, '1 second');

SELECT rate_limit_drop(name) FROM rate_limit_config WHERE name LIKE 'reserve_%';
RESET pg_ratelimit.fake_now;
