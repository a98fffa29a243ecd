-- Each backend caches limit definitions; every change to rate_limit_config reaches the cache, whether
-- made by rate_limit_define or by direct DML, and a rolled-back change leaves no trace in it.
-- (isolation test config_invalidation covers changes committed by another session.)
SET timezone = 'UTC';
SET datestyle = 'ISO';
SET intervalstyle = 'postgres';
SET pg_ratelimit.fake_now = '2026-01-01 00:00:00';

SELECT rate_limit_define('cached', rate => 5, period => '1 hour');
SELECT allowed, remaining FROM rate_limit_check('k', 'cached', 5);
UPDATE rate_limit_config SET capacity = 2 WHERE name = 'cached';
SELECT allowed, remaining FROM rate_limit_check('k', 'cached', 2);
SELECT allowed, remaining FROM rate_limit_check('k', 'cached', 5);
DELETE FROM rate_limit_config WHERE name = 'cached';
SELECT allowed, remaining FROM rate_limit_check('k', 'cached');
INSERT INTO rate_limit_config (name, algorithm, rate, period, capacity) VALUES ('cached', 'fixed_window', 4, '1 hour', 4);
SELECT allowed, remaining FROM rate_limit_check('k', 'cached', 4);

BEGIN;
TRUNCATE rate_limit_config;
SELECT allowed, remaining FROM rate_limit_check('k');
ROLLBACK;
SELECT allowed, remaining FROM rate_limit_check('k');

-- Inserting an existing name merges into an update instead of failing: this is what lets pg_restore
-- bring back a redefined 'default' over the row CREATE EXTENSION made.
INSERT INTO rate_limit_config (name, algorithm, rate, period, capacity) VALUES ('default', 'token_bucket', 7, '1 minute', 7);
SELECT name, algorithm, rate, period, capacity FROM rate_limit_config WHERE name = 'default';
SELECT allowed, remaining FROM rate_limit_check('k', 'default');
SELECT rate_limit_define('default', rate => 120, period => '1 minute');

SELECT rate_limit_drop('cached');
RESET pg_ratelimit.fake_now;
