-- The server's clock drives refill. If it steps backwards no units are minted, and the
-- clock-pinning setting is for superusers only.
SET timezone = 'UTC';
SET datestyle = 'ISO';
SET intervalstyle = 'postgres';
SELECT rate_limit_define('clock', rate => 10, period => '10 seconds');

SET pg_ratelimit.fake_now = '2026-01-01 00:01:00';
SELECT * FROM rate_limit_request('k', 'clock', 10);
-- The clock steps back 30 s: the key is still evaluated at 00:01:00, nothing refills, and the
-- wait is reported from the real (earlier) now.
SET pg_ratelimit.fake_now = '2026-01-01 00:00:30';
SELECT * FROM rate_limit_request('k', 'clock');
SELECT ts FROM rate_limit_state WHERE limit_name = 'clock';
-- Back to 00:01:01: exactly one second of refill since 00:01:00, not 31.
SET pg_ratelimit.fake_now = '2026-01-01 00:01:01';
SELECT * FROM rate_limit_request('k', 'clock');
SELECT * FROM rate_limit_request('k', 'clock');

-- Without the setting, the real clock is used: a fresh key starts full.
RESET pg_ratelimit.fake_now;
SELECT allowed, remaining FROM rate_limit_request('real-clock', 'clock');
SELECT ts > now() - interval '1 hour' AS recent FROM rate_limit_state WHERE key = 'real-clock';
-- The real clock is the time of the call, not of the transaction start.
BEGIN;
SELECT pg_sleep(0.01);
SELECT allowed FROM rate_limit_request('real-clock', 'clock');
SELECT ts > now() AS later_than_transaction_start FROM rate_limit_state WHERE key = 'real-clock';
COMMIT;

-- Bad values are refused.
SET pg_ratelimit.fake_now = 'not a time';
SET pg_ratelimit.fake_now = 'infinity';
-- Ordinary roles cannot pin the clock.
CREATE ROLE regress_rl_clock;
SET ROLE regress_rl_clock;
SET pg_ratelimit.fake_now = '2026-01-01 00:00:00';
RESET ROLE;
DROP ROLE regress_rl_clock;

SELECT rate_limit_drop('clock');
