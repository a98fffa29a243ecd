-- Every bad input gets an ERROR with a proper SQLSTATE, and nothing is written.
SET timezone = 'UTC';
SET datestyle = 'ISO';
SET intervalstyle = 'postgres';
SET pg_ratelimit.fake_now = '2026-01-01 00:00:00';

-- Runs a statement and shows the SQLSTATE and message it fails with.
CREATE FUNCTION pg_temp.error_of(statement text) RETURNS text LANGUAGE plpgsql AS $$
BEGIN
    EXECUTE statement;
    RETURN 'no error';
EXCEPTION WHEN OTHERS THEN
    RETURN SQLSTATE || ': ' || SQLERRM;
END
$$;

SELECT rate_limit_define('small', rate => 5, period => '1 minute');

-- Requests, checks and refunds.
SELECT statement, pg_temp.error_of(statement) FROM unnest(ARRAY[
    $$SELECT rate_limit_request(NULL)$$,
    $$SELECT rate_limit_request('k', NULL)$$,
    $$SELECT rate_limit_request('k', 'no_such_limit')$$,
    $$SELECT rate_limit_request('k', 'small', 0)$$,
    $$SELECT rate_limit_request('k', 'small', -1)$$,
    $$SELECT rate_limit_request('k', 'small', 'NaN')$$,
    $$SELECT rate_limit_request('k', 'small', 'Infinity')$$,
    $$SELECT rate_limit_request('k', 'small', 6)$$,
    $$SELECT rate_limit_request('k', 'small', 6, reserve => true)$$,
    $$SELECT rate_limit_request(repeat('x', 1025), 'small')$$,
    $$SELECT rate_limit_request('k', repeat('n', 129))$$,
    $$SELECT rate_limit_request('k', 'small', 5.000000001)$$,
    $$SELECT rate_limit_check(NULL, 'small')$$,
    $$SELECT rate_limit_check('k', 'no_such_limit')$$,
    $$SELECT rate_limit_check('k', 'small', 0)$$,
    $$SELECT rate_limit_refund('k', 'small', -5)$$,
    $$SELECT rate_limit_refund('k', NULL)$$,
    $$SELECT rate_limit_reset(NULL, 'small')$$,
    $$SELECT rate_limit_reset('k', 'no_such_limit')$$,
    $$SELECT rate_limit_reset('k', NULL)$$
]) AS statement;

-- Definitions.
SELECT statement, pg_temp.error_of(statement) FROM unnest(ARRAY[
    $$SELECT rate_limit_define(NULL, 1, '1 second')$$,
    $$SELECT rate_limit_define('', 1, '1 second')$$,
    $$SELECT rate_limit_define(repeat('n', 129), 1, '1 second')$$,
    $$SELECT rate_limit_define('bad', NULL, '1 second')$$,
    $$SELECT rate_limit_define('bad', 0, '1 second')$$,
    $$SELECT rate_limit_define('bad', -3, '1 second')$$,
    $$SELECT rate_limit_define('bad', 'NaN', '1 second')$$,
    $$SELECT rate_limit_define('bad', 'Infinity', '1 second')$$,
    $$SELECT rate_limit_define('bad', 1e13, '1 second')$$,
    $$SELECT rate_limit_define('bad', 1, NULL)$$,
    $$SELECT rate_limit_define('bad', 1, '0 seconds')$$,
    $$SELECT rate_limit_define('bad', 1, '-1 minute')$$,
    $$SELECT rate_limit_define('bad', 1, '1 month')$$,
    $$SELECT rate_limit_define('bad', 1, '101 years')$$,
    $$SELECT rate_limit_define('bad', 1, '36601 days')$$,
    $$SELECT rate_limit_define('bad', 1, '36600 days 00:00:00.000001')$$,
    $$SELECT rate_limit_define('bad', 1, '1 second', NULL)$$,
    $$SELECT rate_limit_define('bad', 1, '1 second', 'leaky_bucket')$$,
    $$SELECT rate_limit_define('bad', 1, '1 second', capacity => 0)$$,
    $$SELECT rate_limit_define('bad', 1, '1 second', capacity => 'NaN')$$,
    $$SELECT rate_limit_define('bad', 1, '1 second', max_reserved => -1)$$,
    $$SELECT rate_limit_define('bad', 1, '1 second', max_reserved => 'NaN')$$,
    $$SELECT rate_limit_define('bad', 1, '1 second', max_reserved => 1e13)$$,
    $$SELECT rate_limit_define('bad', 1, '1 second', start => now())$$,
    $$SELECT rate_limit_define('bad', 1, '1 second', 'fixed_window', start => 'infinity')$$,
    $$SELECT rate_limit_define('bad', 1, '1 second', 'fixed_window', start => '-infinity')$$,
    $$SELECT rate_limit_define('bad', 1, '1 second', 'fixed_window', start => '20000-01-01')$$,
    $$SELECT rate_limit_drop(NULL)$$,
    $$SELECT rate_limit_drop('no_such_limit')$$,
    $$SELECT rate_limit_drop('default')$$
]) AS statement;

-- Nothing was written by any of them.
SELECT name FROM rate_limit_config ORDER BY name;
SELECT count(*) AS state_rows FROM rate_limit_state;

-- The full message, with detail and hint, for the most common mistakes.
SELECT rate_limit_request('k', 'no_such_limit');
SELECT rate_limit_request('k', 'small', 6);
SELECT rate_limit_define('bad', 1, '1 second', 'leaky_bucket');
SELECT rate_limit_define('bad', 1, '1 month');

-- Read-only transactions: each write names what it could not do.
SELECT allowed, remaining FROM rate_limit_request('ro', 'small');
BEGIN READ ONLY;
SELECT allowed, remaining FROM rate_limit_check('ro', 'small');
SAVEPOINT s;
SELECT rate_limit_request('ro', 'small');
ROLLBACK TO s;
SELECT rate_limit_refund('ro', 'small');
ROLLBACK TO s;
SELECT rate_limit_reset('ro', 'small');
ROLLBACK;

-- The tables' own checks stop bad rows written directly, too.
INSERT INTO rate_limit_config (name, algorithm, rate, period, capacity) VALUES ('direct', 'token_bucket', 'NaN', '1 second', 1);
INSERT INTO rate_limit_config (name, algorithm, rate, period, capacity) VALUES ('direct', 'token_bucket', 1, '1 year', 1);
INSERT INTO rate_limit_config (name, algorithm, rate, period, capacity, start) VALUES ('direct', 'token_bucket', 1, '1 second', 1, '2026-01-01 00:00:00+00');

SELECT rate_limit_drop('small');
RESET pg_ratelimit.fake_now;
