-- Reservations: reserve => true takes units even when there are not enough, going into debt (up to
-- max_reserved); retry_after then says when the reserved work may run.
SET timezone = 'UTC';
SET datestyle = 'ISO';
SET intervalstyle = 'postgres';
SET pg_ratelimit.fake_now = '2026-01-01 00:00:00';

-- Convex's example: 3 tokens available, a request for 5 leaves -2; the work may run once 2 have
-- refilled (2 s at 1 per second).
SELECT rate_limit_define('llm_tokens', rate => 1, period => '1 second', capacity => 10);
SELECT * FROM rate_limit_request('app', 'llm_tokens', 7);
SELECT * FROM rate_limit_request('app', 'llm_tokens', 5);                   -- denied without reserve
SELECT * FROM rate_limit_request('app', 'llm_tokens', 5, reserve => true);  -- reserved
SELECT value FROM rate_limit_state WHERE limit_name = 'llm_tokens';
-- Later requests queue behind the debt: another reservation of 4 runs at 6 s.
SELECT * FROM rate_limit_request('app', 'llm_tokens', 4, reserve => true);
SELECT * FROM rate_limit_check('app', 'llm_tokens');
-- Once the debt is repaid, plain requests succeed again.
SET pg_ratelimit.fake_now = '2026-01-01 00:00:07';
SELECT * FROM rate_limit_request('app', 'llm_tokens');

-- max_reserved bounds the debt: at most 3 units of debt.
SELECT rate_limit_define('bounded', rate => 1, period => '1 second', capacity => 5, max_reserved => 3);
SET pg_ratelimit.fake_now = '2026-01-01 00:00:00';
SELECT * FROM rate_limit_request('app', 'bounded', 5);
SELECT * FROM rate_limit_request('app', 'bounded', 3, reserve => true);     -- debt 3: allowed
SELECT * FROM rate_limit_request('app', 'bounded', 1, reserve => true);     -- debt 4: denied
-- The denial's retry_after is when the same reservation fits: debt back to 2 after 1 s.
SET pg_ratelimit.fake_now = '2026-01-01 00:00:01';
SELECT * FROM rate_limit_request('app', 'bounded', 1, reserve => true);
-- max_reserved => 0 allows no debt at all.
SELECT rate_limit_define('no_debt', rate => 1, period => '1 second', capacity => 5, max_reserved => 0);
SELECT * FROM rate_limit_request('app', 'no_debt', 5);
SELECT * FROM rate_limit_request('app', 'no_debt', 1, reserve => true);

-- Fixed window reservations wait for the window in which the debt is repaid.
SELECT rate_limit_define('batch', rate => 10, period => '1 minute', algorithm => 'fixed_window',
                         start => '2026-01-01 00:00:00+00');
SET pg_ratelimit.fake_now = '2026-01-01 00:00:15';
SELECT * FROM rate_limit_request('job', 'batch', 8);
SELECT * FROM rate_limit_request('job', 'batch', 9, reserve => true);   -- debt 7: next window
SELECT * FROM rate_limit_request('job', 'batch', 10, reserve => true);  -- debt 17: two windows on
SET pg_ratelimit.fake_now = '2026-01-01 00:02:00';
SELECT * FROM rate_limit_check('job', 'batch');
SET pg_ratelimit.fake_now = '2026-01-01 00:03:00';
SELECT * FROM rate_limit_check('job', 'batch');

SELECT rate_limit_drop(name) FROM unnest(ARRAY['llm_tokens', 'bounded', 'no_debt', 'batch']) AS name;
RESET pg_ratelimit.fake_now;
