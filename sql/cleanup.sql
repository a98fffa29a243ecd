-- rate_limit_cleanup deletes the rows of keys that are back at full capacity (no row means full, so
-- nothing changes for anyone) and rows of limits removed from rate_limit_config directly. A row goes only
-- once its key has been full for five minutes, so that a server clock stepped back by up to five minutes
-- cannot find the key without its row and refill it again.
SET timezone = 'UTC';
SET datestyle = 'ISO';
SET intervalstyle = 'postgres';
SET pg_ratelimit.fake_now = '2026-01-01 00:00:00';
SELECT rate_limit_define('cl_bucket', rate => 10, period => '1 minute');
SELECT rate_limit_define('cl_window', rate => 5, period => '1 hour', algorithm => 'fixed_window',
                         start => '2026-01-01 00:00:00+00');
SELECT allowed FROM rate_limit_request('empty', 'cl_bucket', 10);
SELECT allowed FROM rate_limit_request('one_used', 'cl_bucket');
SELECT allowed FROM rate_limit_request('in_debt', 'cl_bucket', 10);
SELECT allowed FROM rate_limit_request('in_debt', 'cl_bucket', 5, reserve => true);
SELECT allowed FROM rate_limit_request('window', 'cl_window', 5);

-- Nothing is full yet.
SELECT rate_limit_cleanup();
-- Six seconds later 'one_used' has its unit back, but only five minutes on does its row go.
SET pg_ratelimit.fake_now = '2026-01-01 00:00:06';
SELECT rate_limit_cleanup('cl_bucket');
SET pg_ratelimit.fake_now = '2026-01-01 00:05:05.999999';
SELECT rate_limit_cleanup('cl_bucket');
SET pg_ratelimit.fake_now = '2026-01-01 00:05:06';
SELECT rate_limit_cleanup('cl_bucket');
SELECT limit_name, key FROM rate_limit_state WHERE limit_name LIKE 'cl\_%' ORDER BY 1, 2;
-- 'empty' is full a minute on, 'in_debt' still owes; the window key refills only at 01:00.
SET pg_ratelimit.fake_now = '2026-01-01 00:06:00';
SELECT rate_limit_cleanup();
SELECT limit_name, key FROM rate_limit_state WHERE limit_name LIKE 'cl\_%' ORDER BY 1, 2;
SET pg_ratelimit.fake_now = '2026-01-01 01:05:00';
SELECT rate_limit_cleanup();
SELECT limit_name, key FROM rate_limit_state WHERE limit_name LIKE 'cl\_%' ORDER BY 1, 2;
-- Deleted rows were equivalent to full keys: the next request sees a full key.
SELECT allowed, remaining FROM rate_limit_request('empty', 'cl_bucket');

-- A row stored later than the clock (it stepped back) stays, full or not: it holds the key's time.
SET pg_ratelimit.fake_now = '2026-01-02 00:00:00';
SELECT allowed FROM rate_limit_request('ahead', 'cl_bucket');
SELECT allowed FROM rate_limit_refund('ahead', 'cl_bucket');
SET pg_ratelimit.fake_now = '2026-01-01 23:00:00';
SELECT rate_limit_cleanup('cl_bucket');
SELECT limit_name, key FROM rate_limit_state WHERE key = 'ahead';
SET pg_ratelimit.fake_now = '2026-01-02 00:05:00';
SELECT rate_limit_cleanup('cl_bucket');
SELECT count(*) AS ahead_rows FROM rate_limit_state WHERE key = 'ahead';

-- Rows of a limit deleted from the table directly are orphans; cleanup of all limits removes them.
SELECT rate_limit_define('cl_orphan', rate => 1, period => '1 day');
SELECT allowed FROM rate_limit_request('k', 'cl_orphan');
DELETE FROM rate_limit_config WHERE name = 'cl_orphan';
SELECT rate_limit_cleanup();
SELECT count(*) AS orphans FROM rate_limit_state WHERE limit_name = 'cl_orphan';

SELECT rate_limit_cleanup('no_such_limit');
SELECT rate_limit_cleanup(NULL::text) >= 0 AS null_means_all;
SELECT rate_limit_drop('cl_bucket'), rate_limit_drop('cl_window');
RESET pg_ratelimit.fake_now;
