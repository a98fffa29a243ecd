-- rate_limit_define creates or updates named limits; rate_limit_drop removes them.
SET timezone = 'UTC';
SET datestyle = 'ISO';
SET intervalstyle = 'postgres';
SET pg_ratelimit.fake_now = '2026-01-01 00:00:00';

-- Named arguments as in the README; capacity defaults to rate, max_reserved to unlimited (NULL).
SELECT rate_limit_define('send_message', rate => 5, period => '2 minutes', algorithm => 'fixed_window');
SELECT rate_limit_define('llm', 1000, '1 minute', 'token_bucket', 5000, 2000);
SELECT rate_limit_define('midnight', rate => 100, period => '1 day', algorithm => 'fixed_window',
                         start => '2026-01-01 07:00:00+00');
-- NULL for an optional argument means its default.
SELECT rate_limit_define('nulls', rate => 3, period => '3 seconds', algorithm => 'token_bucket',
                         capacity => NULL, max_reserved => NULL, start => NULL);
SELECT name, algorithm, rate, period, capacity, max_reserved, start FROM rate_limit_config ORDER BY name;

-- Redefining carries the keys' state over: 3 of 5 left become 6 of 10 when the rate (and with it the
-- default capacity) doubles (sql/rescale.sql has the other rules).
SELECT rate_limit_define('keep', rate => 5, period => '1 hour');
SELECT * FROM rate_limit_request('k', 'keep', 2);
SELECT rate_limit_define('keep', rate => 10, period => '1 hour');
SELECT * FROM rate_limit_request('k', 'keep');
SELECT name, rate, capacity FROM rate_limit_config WHERE name = 'keep';
-- Lowering capacity caps what a key holds.
SELECT rate_limit_define('keep', rate => 10, period => '1 hour', capacity => 4);
SELECT * FROM rate_limit_check('k', 'keep');
-- Changing the algorithm starts its keys afresh (their two numbers would mean something else).
SELECT rate_limit_define('keep', rate => 10, period => '1 hour', algorithm => 'fixed_window');
SELECT count(*) AS keys_after_algorithm_change FROM rate_limit_state WHERE limit_name = 'keep';
SELECT * FROM rate_limit_request('k', 'keep');

-- The shipped default can be redefined (and is then used by calls that name no limit).
SELECT rate_limit_define('default', rate => 3, period => '1 second');
SELECT * FROM rate_limit_request('someone');
SELECT rate_limit_define('default', rate => 120, period => '1 minute');
SELECT name, algorithm, rate, period, capacity FROM rate_limit_config WHERE name = 'default';

-- Dropping a limit removes its keys' state too; the default cannot be dropped.
SELECT rate_limit_drop('keep');
SELECT count(*) AS keys_of_dropped_limit FROM rate_limit_state WHERE limit_name = 'keep';
SELECT * FROM rate_limit_request('k', 'keep');
SELECT rate_limit_drop('keep');
SELECT rate_limit_drop('default');

-- Names are case-sensitive and compared byte-wise; any non-empty text up to 128 bytes is a name.
SELECT rate_limit_define('API: POST /v1/messages', rate => 1, period => '1 second');
SELECT * FROM rate_limit_request('k', 'api: post /v1/messages');
SELECT * FROM rate_limit_request('k', 'API: POST /v1/messages');

SELECT rate_limit_drop(name) FROM rate_limit_config WHERE name <> 'default' ORDER BY name;
DELETE FROM rate_limit_state;
RESET pg_ratelimit.fake_now;
