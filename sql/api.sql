-- The SQL API as installed: functions, the decision type, the shipped 'default' limit.
SET timezone = 'UTC';
SET datestyle = 'ISO';
SET intervalstyle = 'postgres';

SELECT p.proname, pg_get_function_arguments(p.oid) AS arguments, pg_get_function_result(p.oid) AS result,
       p.prosecdef AS security_definer, p.provolatile AS volatility
  FROM pg_proc p JOIN pg_depend d ON d.objid = p.oid AND d.classid = 'pg_proc'::regclass
  JOIN pg_extension e ON e.oid = d.refobjid AND e.extname = 'pg_ratelimit'
 ORDER BY p.proname, arguments;  -- overloads (rate_limit_stats_reset) in a fixed order

SELECT attname, format_type(atttypid, atttypmod)
  FROM pg_attribute WHERE attrelid = 'rate_limit_decision'::regclass AND attnum > 0 ORDER BY attnum;

-- The shipped limit: token bucket, 120 per minute, capacity 120.
SELECT name, algorithm, rate, period, capacity, max_reserved, start FROM rate_limit_config ORDER BY name;

SET pg_ratelimit.fake_now = '2026-01-01 00:00:00+00';
-- One unit refills every 0.5 s, so a single request is back to full after 0.5 s.
SELECT * FROM rate_limit_request('api-user');
-- A burst of 120 is admitted, the 121st is denied until the next unit arrives. (The call sits in the
-- select list: a FROM-clause call without a reference to the series would be evaluated only once.)
SELECT count(*) FILTER (WHERE allowed) AS admitted, count(*) AS attempts
  FROM (SELECT (rate_limit_request('api-burst')).allowed FROM generate_series(1, 200)) AS calls;
SELECT * FROM rate_limit_request('api-burst');
SET pg_ratelimit.fake_now = '2026-01-01 00:00:00.5+00';
SELECT * FROM rate_limit_request('api-burst');
SELECT * FROM rate_limit_request('api-burst');

-- NULL for an optional argument means its default (cost 1, no reservation).
SELECT * FROM rate_limit_request('api-null', 'default', NULL, NULL);
SELECT * FROM rate_limit_check('api-null', 'default', NULL);
SELECT * FROM rate_limit_refund('api-null', 'default', NULL);

-- The state is two numbers per (limit, key).
SELECT limit_name, key, value, ts FROM rate_limit_state ORDER BY limit_name, key;

-- The extension can live in another schema (its functions find their own tables), and a backend that
-- used the old installation switches over cleanly.
DROP EXTENSION pg_ratelimit;
CREATE SCHEMA limits;
CREATE EXTENSION pg_ratelimit SCHEMA limits;
SELECT * FROM limits.rate_limit_request('api-user');
SELECT count(*) FROM limits.rate_limit_state;
DROP EXTENSION pg_ratelimit;
DROP SCHEMA limits;
CREATE EXTENSION pg_ratelimit;
SELECT * FROM rate_limit_request('api-user');
RESET pg_ratelimit.fake_now;
DELETE FROM rate_limit_state;
