-- Consumption is transactional: it commits and rolls back with the caller's transaction.
SET timezone = 'UTC';
SET datestyle = 'ISO';
SET intervalstyle = 'postgres';
SET pg_ratelimit.fake_now = '2026-01-01 00:00:00';
SELECT rate_limit_define('tx', rate => 3, period => '1 hour');

-- A rolled-back transaction leaves no trace, not even the row of a new key.
BEGIN;
SELECT * FROM rate_limit_request('k', 'tx', 3);
SELECT * FROM rate_limit_request('k', 'tx');
ROLLBACK;
SELECT count(*) AS rows_after_rollback FROM rate_limit_state WHERE limit_name = 'tx';
SELECT * FROM rate_limit_check('k', 'tx', 3);

-- Inside one transaction, each call sees the previous ones.
BEGIN;
SELECT allowed, remaining FROM rate_limit_request('k', 'tx');
SELECT allowed, remaining FROM rate_limit_request('k', 'tx');
COMMIT;
SELECT allowed, remaining FROM rate_limit_check('k', 'tx');

-- A savepoint rolled back undoes only what happened after it.
SELECT rate_limit_reset('k', 'tx');
BEGIN;
SELECT allowed, remaining FROM rate_limit_request('k', 'tx');
SAVEPOINT before_second;
SELECT allowed, remaining FROM rate_limit_request('k', 'tx');
ROLLBACK TO SAVEPOINT before_second;
SELECT allowed, remaining FROM rate_limit_check('k', 'tx');
COMMIT;
SELECT value FROM rate_limit_state WHERE limit_name = 'tx' AND key = 'k';

-- Several limits in one transaction are all consumed or none: the application rolls back when one
-- of them denies (the Convex article's advice for multiple limits).
SELECT rate_limit_define('tx_small', rate => 1, period => '1 hour');
SELECT * FROM rate_limit_request('k2', 'tx_small');
BEGIN;
SELECT allowed FROM rate_limit_request('k2', 'tx');
SELECT allowed FROM rate_limit_request('k2', 'tx_small');
ROLLBACK;
SELECT * FROM rate_limit_check('k2', 'tx', 3);

-- Defining a limit is transactional as well, including what this backend has cached.
BEGIN;
SELECT rate_limit_define('tx', rate => 100, period => '1 hour');
SELECT allowed, remaining FROM rate_limit_check('fresh', 'tx');
ROLLBACK;
SELECT allowed, remaining FROM rate_limit_check('fresh', 'tx');
BEGIN;
SELECT rate_limit_define('tx_new', rate => 7, period => '1 hour');
SELECT allowed, remaining FROM rate_limit_request('fresh', 'tx_new');
ROLLBACK;
SELECT allowed, remaining FROM rate_limit_request('fresh', 'tx_new');

-- A read-only transaction may check, and be denied, but not consume.
BEGIN READ ONLY;
SELECT allowed, remaining FROM rate_limit_check('read-only', 'tx');
SELECT allowed, remaining FROM rate_limit_request('read-only', 'tx', 3);
ROLLBACK;
SELECT rate_limit_request('exhausted', 'tx', 3);
BEGIN READ ONLY;
SELECT allowed, remaining FROM rate_limit_request('exhausted', 'tx');
ROLLBACK;

SELECT rate_limit_drop('tx'), rate_limit_drop('tx_small');
RESET pg_ratelimit.fake_now;
