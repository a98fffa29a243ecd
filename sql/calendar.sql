-- Calendar quotas: fixed windows of whole months, weeks or days that open at local midnight in a time
-- zone (time_zone => ...; months default to UTC), exact across daylight-saving changes and month lengths.
SET timezone = 'UTC';
SET datestyle = 'ISO';
SET intervalstyle = 'postgres';

-- The issue's example: 10,000 API calls per calendar month in Europe/Paris, resetting at local midnight
-- on the 1st. The zone is stored in its own spelling.
SELECT rate_limit_define('api_monthly', 10000, '1 month', 'fixed_window', time_zone => 'europe/paris');
SELECT algorithm, rate, period, capacity, start, time_zone FROM rate_limit_config WHERE name = 'api_monthly';
-- In February (CET, UTC+1): March opens at 2026-02-28 23:00 UTC.
SET pg_ratelimit.fake_now = '2026-02-10 12:00:00';
SELECT * FROM rate_limit_request('customer1', 'api_monthly', 9999);
SELECT * FROM rate_limit_request('customer1', 'api_monthly');
SELECT * FROM rate_limit_request('customer1', 'api_monthly');
-- One microsecond before local midnight: still denied, 1 us to wait; at midnight: a new month.
SET pg_ratelimit.fake_now = '2026-02-28 22:59:59.999999';
SELECT * FROM rate_limit_request('customer1', 'api_monthly');
SET pg_ratelimit.fake_now = '2026-02-28 23:00:00';
SELECT * FROM rate_limit_request('customer1', 'api_monthly');
-- March spans the change to summer time (29 March): April opens at 2026-03-31 22:00 UTC (CEST, UTC+2),
-- 31 days less one hour after March opened.
SELECT * FROM rate_limit_request('customer1', 'api_monthly', 9999);
SELECT * FROM rate_limit_check('customer1', 'api_monthly');
SET pg_ratelimit.fake_now = '2026-03-31 21:59:59.999999';
SELECT * FROM rate_limit_check('customer1', 'api_monthly');
SET pg_ratelimit.fake_now = '2026-03-31 22:00:00';
SELECT * FROM rate_limit_check('customer1', 'api_monthly', 10000);
-- October spans the return to winter time: November opens at 2026-10-31 23:00 UTC.
SET pg_ratelimit.fake_now = '2026-10-01 00:00:00';
SELECT * FROM rate_limit_request('customer1', 'api_monthly', 10000);
SET pg_ratelimit.fake_now = '2026-10-31 22:59:59.999999';
SELECT * FROM rate_limit_request('customer1', 'api_monthly');
SET pg_ratelimit.fake_now = '2026-10-31 23:00:00';
SELECT * FROM rate_limit_request('customer1', 'api_monthly');

-- Months of 28 to 31 days, in UTC by default: February 2027 has 28 days, February 2028 29.
SELECT rate_limit_define('monthly_utc', 2, '1 month', 'fixed_window');
SELECT period, time_zone FROM rate_limit_config WHERE name = 'monthly_utc';
SET pg_ratelimit.fake_now = '2027-02-01 00:00:00';
SELECT * FROM rate_limit_request('k', 'monthly_utc', 2);
SELECT * FROM rate_limit_request('k', 'monthly_utc');
SET pg_ratelimit.fake_now = '2028-02-01 00:00:00';
SELECT * FROM rate_limit_request('k', 'monthly_utc', 2);
SELECT * FROM rate_limit_request('k', 'monthly_utc');
SET pg_ratelimit.fake_now = '2028-02-29 23:59:59.999999';
SELECT * FROM rate_limit_check('k', 'monthly_utc');
SET pg_ratelimit.fake_now = '2028-03-01 00:00:00';
SELECT * FROM rate_limit_check('k', 'monthly_utc', 2);
-- The session's time zone changes nothing.
SET timezone = 'Asia/Tokyo';
SELECT * FROM rate_limit_check('k', 'monthly_utc', 2);
SET timezone = 'UTC';

-- Rollover: 100 a month, up to 250 saved; unused units of each month carry over.
SELECT rate_limit_define('rollover', 100, '1 month', 'fixed_window', capacity => 250, time_zone => 'UTC');
SET pg_ratelimit.fake_now = '2026-01-15 00:00:00';
SELECT * FROM rate_limit_request('team', 'rollover', 250);
-- 120 units need two new months: 1 March.
SELECT * FROM rate_limit_check('team', 'rollover', 120);
SET pg_ratelimit.fake_now = '2026-05-20 00:00:00';
SELECT * FROM rate_limit_check('team', 'rollover', 250);

-- Quarters and years: '3 months' windows open on 1 January, April, July and October; '1 year' on 1 January.
SELECT rate_limit_define('quarterly', 1, '3 months', 'fixed_window', time_zone => 'America/New_York');
SET pg_ratelimit.fake_now = '2026-05-15 00:00:00';
SELECT * FROM rate_limit_request('k', 'quarterly');
SELECT * FROM rate_limit_request('k', 'quarterly');
SELECT rate_limit_define('yearly', 1, '1 year', 'fixed_window', time_zone => 'Asia/Kolkata');
SELECT * FROM rate_limit_request('k', 'yearly');
SELECT * FROM rate_limit_request('k', 'yearly');

-- Days: a day in Paris lasts 23 hours on 29 March 2026 and 25 hours on 25 October 2026.
SELECT rate_limit_define('daily', 1, '1 day', 'fixed_window', time_zone => 'Europe/Paris');
SET pg_ratelimit.fake_now = '2026-03-28 23:00:00';
SELECT * FROM rate_limit_request('k', 'daily');
SELECT * FROM rate_limit_request('k', 'daily');
SET pg_ratelimit.fake_now = '2026-03-29 22:00:00';
SELECT * FROM rate_limit_request('k', 'daily');
SET pg_ratelimit.fake_now = '2026-10-24 22:00:00';
SELECT * FROM rate_limit_request('k', 'daily');
SELECT * FROM rate_limit_request('k', 'daily');
-- Two days: windows counted from 1 January 2000, so they open on even days of January 2026.
SELECT rate_limit_define('two_days', 1, '2 days', 'fixed_window', time_zone => 'UTC');
SET pg_ratelimit.fake_now = '2026-01-02 12:00:00';
SELECT * FROM rate_limit_request('k', 'two_days');
SELECT * FROM rate_limit_request('k', 'two_days');

-- Weeks open on Monday at local midnight: Wednesday 25 November 2026 in New York waits for Monday 30
-- November, 00:00 EST (05:00 UTC).
SELECT rate_limit_define('weekly', 1, '1 week', 'fixed_window', time_zone => 'America/New_York');
SET pg_ratelimit.fake_now = '2026-11-25 12:00:00';
SELECT * FROM rate_limit_request('k', 'weekly');
SELECT * FROM rate_limit_request('k', 'weekly');
SET pg_ratelimit.fake_now = '2026-11-30 04:59:59.999999';
SELECT * FROM rate_limit_request('k', 'weekly');
SET pg_ratelimit.fake_now = '2026-11-30 05:00:00';
SELECT * FROM rate_limit_request('k', 'weekly');

-- Without time_zone, a period of days or weeks keeps the plain grid (24-hour windows, each key's own
-- offset); with one, the calendar's.
SELECT rate_limit_define('plain_day', 1, '1 day', 'fixed_window');
SELECT period, time_zone FROM rate_limit_config WHERE name = 'plain_day';

-- A midnight that daylight saving skips: in Sao Paulo, clocks went from 00:00 to 01:00 on 4 November
-- 2018; that day opened at 01:00 local (03:00 UTC). On 17 February 2019 they went back from 00:00 to
-- 23:00 on the 16th: the 16th lasted 25 hours and the 17th opened at the second midnight (03:00 UTC).
SELECT rate_limit_define('sao_paulo', 1, '1 day', 'fixed_window', time_zone => 'America/Sao_Paulo');
SET pg_ratelimit.fake_now = '2018-11-03 12:00:00';
SELECT * FROM rate_limit_request('k', 'sao_paulo');
SET pg_ratelimit.fake_now = '2018-11-04 02:59:59.999999';
SELECT * FROM rate_limit_request('k', 'sao_paulo');
SET pg_ratelimit.fake_now = '2018-11-04 03:00:00';
SELECT * FROM rate_limit_request('k', 'sao_paulo');
SET pg_ratelimit.fake_now = '2019-02-16 12:00:00';
SELECT * FROM rate_limit_request('k', 'sao_paulo');
SET pg_ratelimit.fake_now = '2019-02-17 02:30:00';
SELECT * FROM rate_limit_request('k', 'sao_paulo');
SET pg_ratelimit.fake_now = '2019-02-17 03:00:00';
SELECT * FROM rate_limit_request('k', 'sao_paulo');

-- Shards split a calendar quota like any other.
SELECT rate_limit_define('sharded_monthly', 400, '1 month', 'fixed_window', shards => 4, time_zone => 'UTC');
SET pg_ratelimit.fake_now = '2026-06-10 00:00:00';
SELECT count(*) FILTER (WHERE r.allowed) AS allowed, count(*) FILTER (WHERE NOT r.allowed) AS denied
  FROM generate_series(1, 420) AS g, LATERAL rate_limit_request('hot' || left(g::text, 0), 'sharded_monthly') AS r;

-- Redefining the period or the zone keeps each key's units (rescale => 'proportional' scales only by
-- capacity): 3 used of 10 stay used when the month becomes a week.
SELECT rate_limit_define('redefined', 10, '1 month', 'fixed_window', time_zone => 'UTC');
SET pg_ratelimit.fake_now = '2026-06-10 00:00:00';
SELECT * FROM rate_limit_request('k', 'redefined', 3);
SELECT rate_limit_define('redefined', 10, '1 week', 'fixed_window', time_zone => 'Europe/Paris');
SELECT * FROM rate_limit_check('k', 'redefined', 7);
SELECT * FROM rate_limit_check('k', 'redefined', 8);

-- Bad input: every refusal is 22023 (checked in bad_input_table too).
CREATE FUNCTION calendar_error(statement text) RETURNS text LANGUAGE plpgsql AS $$
BEGIN
    EXECUTE statement;
    RETURN 'no error';
EXCEPTION WHEN OTHERS THEN
    RETURN SQLSTATE || ': ' || SQLERRM;
END
$$;
SELECT statement, calendar_error(statement) FROM unnest(ARRAY[
    $$SELECT rate_limit_define('bad', 1, '1 month')$$,
    $$SELECT rate_limit_define('bad', 1, '1 month', 'gcra')$$,
    $$SELECT rate_limit_define('bad', 1, '1 month', 'sliding_window')$$,
    $$SELECT rate_limit_define('bad', 1, '1 day', 'token_bucket', time_zone => 'UTC')$$,
    $$SELECT rate_limit_define('bad', 1, '1 month 1 day', 'fixed_window')$$,
    $$SELECT rate_limit_define('bad', 1, '1 month 1 second', 'fixed_window')$$,
    $$SELECT rate_limit_define('bad', 1, '36 hours', 'fixed_window', time_zone => 'UTC')$$,
    $$SELECT rate_limit_define('bad', 1, '1 day 1 hour', 'fixed_window', time_zone => 'UTC')$$,
    $$SELECT rate_limit_define('bad', 1, '-1 month', 'fixed_window')$$,
    $$SELECT rate_limit_define('bad', 1, '1 month -1 day', 'fixed_window')$$,
    $$SELECT rate_limit_define('bad', 1, '1201 months', 'fixed_window')$$,
    $$SELECT rate_limit_define('bad', 1, '36601 days', 'fixed_window', time_zone => 'UTC')$$,
    $$SELECT rate_limit_define('bad', 1, '1 month', 'fixed_window', start => '2026-01-01')$$,
    $$SELECT rate_limit_define('bad', 1, '1 day', 'fixed_window', time_zone => 'Mars/Olympus_Mons')$$,
    $$SELECT rate_limit_define('bad', 1, '1 day', 'fixed_window', time_zone => '')$$,
    $$SELECT rate_limit_define('bad', 1, '1 day', 'fixed_window', time_zone => repeat('x', 1000))$$,
    $$SELECT rate_limit_define('bad', 1, '1 day', 'fixed_window', time_zone => 'right/UTC')$$,
    $$SELECT rate_limit_define('bad', 1, '1 day', 'fixed_window', time_zone => '+03')$$,
    $$SELECT rate_limit_define('bad', 1, '1 day', 'fixed_window', time_zone => '-05:30')$$,
    $$SELECT rate_limit_define('bad', 1, '1 day', 'fixed_window', time_zone => '3')$$,
    $$SELECT rate_limit_define('bad', 1, '1 day', 'fixed_window', time_zone => 'localtime')$$,
    $$SELECT rate_limit_define('bad', 1, '1 day', 'fixed_window', time_zone => 'PosixRules')$$
]) AS statement;
SELECT count(*) AS bad_defined FROM rate_limit_config WHERE name = 'bad';
-- Direct DML is held to the same rules: the table's row trigger refuses what rate_limit_define refuses
-- (what no call could use), with the same errors. A zone for the POSIX sign: 3 hours east all year.
SELECT statement, calendar_error(statement) FROM unnest(ARRAY[
    $$INSERT INTO rate_limit_config (name, algorithm, rate, period, capacity, time_zone)
      VALUES ('direct', 'token_bucket', 1, '1 day', 1, 'UTC')$$,
    $$INSERT INTO rate_limit_config (name, algorithm, rate, period, capacity, time_zone)
      VALUES ('direct', 'fixed_window', 1, '1 day', 1, 'Nowhere/Special')$$,
    $$INSERT INTO rate_limit_config (name, algorithm, rate, period, capacity, time_zone)
      VALUES ('direct', 'fixed_window', 1, '90 minutes', 1, 'Europe/Paris')$$,
    $$INSERT INTO rate_limit_config (name, algorithm, rate, period, capacity)
      VALUES ('direct', 'fixed_window', 1, '1 mon 1 day', 1)$$,
    $$INSERT INTO rate_limit_config (name, algorithm, rate, period, capacity, start)
      VALUES ('direct', 'fixed_window', 1, '1 mon', 1, '2026-01-01')$$,
    $$INSERT INTO rate_limit_config (name, algorithm, rate, period, capacity, time_zone)
      VALUES ('direct', 'fixed_window', 1, '1 day', 1, '+03')$$,
    $$UPDATE rate_limit_config SET time_zone = 'Mars/Olympus' WHERE name = 'default'$$,
    $$INSERT INTO rate_limit_config (name, algorithm, rate, period, capacity, time_zone)
      VALUES ('direct', 'fixed_window', 1, '1 day', 1, 'Etc/GMT-3')$$
]) AS statement;
SELECT name, period, time_zone FROM rate_limit_config WHERE name IN ('direct', 'default') ORDER BY name;
SET pg_ratelimit.fake_now = '2026-06-10 20:00:00';
SELECT * FROM rate_limit_request('k', 'direct');
SELECT rate_limit_drop('direct');
DROP FUNCTION calendar_error(text);
RESET pg_ratelimit.fake_now;
SELECT count(*) AS dropped FROM rate_limit_config, LATERAL rate_limit_drop(name)
 WHERE name IN ('api_monthly', 'daily', 'monthly_utc', 'plain_day', 'quarterly', 'redefined', 'rollover',
                'sao_paulo', 'sharded_monthly', 'two_days', 'weekly', 'yearly');
SELECT name FROM rate_limit_config ORDER BY name;
