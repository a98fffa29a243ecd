-- rate_limit_check consumes nothing; rate_limit_refund gives units back (never above capacity);
-- rate_limit_reset starts a key over at full capacity.
SET timezone = 'UTC';
SET datestyle = 'ISO';
SET intervalstyle = 'postgres';
SET pg_ratelimit.fake_now = '2026-01-01 00:00:00';
SELECT rate_limit_define('logins', rate => 5, period => '1 hour');

-- check writes nothing, not even a row for a new key, and repeats the same answer.
SELECT * FROM rate_limit_check('ip1', 'logins');
SELECT * FROM rate_limit_check('ip1', 'logins', 5);
SELECT * FROM rate_limit_check('ip1', 'logins', 4.5);
SELECT count(*) AS rows_written FROM rate_limit_state WHERE limit_name = 'logins';

-- check returns exactly what request would: both deny once the key is empty.
SELECT * FROM rate_limit_request('ip1', 'logins', 5);
SELECT * FROM rate_limit_check('ip1', 'logins');
SELECT * FROM rate_limit_request('ip1', 'logins');
SELECT value FROM rate_limit_state WHERE limit_name = 'logins' AND key = 'ip1';

-- A refund cancels a reservation: units come back.
SELECT * FROM rate_limit_refund('ip1', 'logins', 2);
SELECT * FROM rate_limit_request('ip1', 'logins', 2);
-- Refunds never raise a key above its capacity.
SELECT * FROM rate_limit_refund('ip1', 'logins', 5);
SELECT * FROM rate_limit_refund('ip1', 'logins', 5);
SELECT value FROM rate_limit_state WHERE limit_name = 'logins' AND key = 'ip1';
-- Refunding a key that has no row changes nothing (it is full already).
SELECT * FROM rate_limit_refund('ip2', 'logins');
SELECT count(*) AS rows_for_ip2 FROM rate_limit_state WHERE key = 'ip2';

-- A refund repays reservation debt; retry_after says how long the key stays in debt.
SELECT rate_limit_define('reservable', rate => 1, period => '1 second', capacity => 2);
SELECT * FROM rate_limit_request('ip1', 'reservable', 2);
SELECT * FROM rate_limit_request('ip1', 'reservable', 2, reserve => true);
SELECT * FROM rate_limit_refund('ip1', 'reservable', 1);
SELECT * FROM rate_limit_refund('ip1', 'reservable', 1);

-- Reset: the key starts over at full capacity (its row is removed).
SELECT * FROM rate_limit_request('ip3', 'logins', 5);
SELECT rate_limit_reset('ip3', 'logins');
SELECT count(*) AS rows_for_ip3 FROM rate_limit_state WHERE key = 'ip3';
SELECT * FROM rate_limit_request('ip3', 'logins', 5);
-- Resetting a key that has no row is harmless; other keys are untouched.
SELECT rate_limit_reset('never-seen', 'logins');
SELECT key, value FROM rate_limit_state WHERE limit_name = 'logins' ORDER BY key;

-- The failed-login pattern from the Convex article: reset after a successful login.
SELECT * FROM rate_limit_request('user42', 'logins');
SELECT * FROM rate_limit_request('user42', 'logins');
SELECT rate_limit_reset('user42', 'logins');
SELECT * FROM rate_limit_check('user42', 'logins', 5);

-- The default limit applies when no limit is named.
SELECT * FROM rate_limit_request('someone');
SELECT * FROM rate_limit_refund('someone');
SELECT rate_limit_reset('someone');
SELECT count(*) FROM rate_limit_state WHERE limit_name = 'default';

SELECT rate_limit_drop('logins'), rate_limit_drop('reservable');
RESET pg_ratelimit.fake_now;
