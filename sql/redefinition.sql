-- A redefinition takes effect at its instant: every key is first brought to that instant under the old
-- definition, then carried over by the rescale rule; the time before it is never counted at the new
-- numbers. Every algorithm, both rules, every storage, overrides; and a memory key's "full again at"
-- follows the new numbers (cleanup and eviction must not drop a key that still owes units).
SET timezone = 'UTC';
SET intervalstyle = 'postgres';
SET extra_float_digits = 0;
SET pg_ratelimit.fake_now = '2026-01-01 00:00:00';
-- The units a key holds now (remaining counts after the check's own unit, when allowed).
CREATE FUNCTION pg_temp.units_left(key text, lim text) RETURNS bigint LANGUAGE sql
    AS $$ SELECT d.remaining + d.allowed::int FROM rate_limit_check(key, lim) AS d $$;

-- Token bucket, 5 per second, capacity 2: a key reserves 2, then 2 more (2 units of debt). 200 ms later
-- the limit becomes 10 per second. Under the old rate the key earned 1 unit in those 200 ms (1 of debt
-- left): a request of 1 right after must wait 200 ms (100 ms if the past were counted at the new rate), and
-- after a refund of 2 a request of 2 is denied.
-- Each step its own transaction (a memory limit's keys are carried over when the redefinition commits).
CREATE TEMP TABLE faster_results (storage text, algorithm text, rescale text, wait interval, after_refund_allowed boolean);
CREATE PROCEDURE pg_temp.faster(storage text, algorithm text, rescale text) LANGUAGE plpgsql AS $$
DECLARE
    lim text := 'faster_' || storage || '_' || algorithm || '_' || rescale;
BEGIN
    PERFORM set_config('pg_ratelimit.fake_now', '2026-01-01 00:00:00', false);
    PERFORM rate_limit_define(lim, rate => 5, period => '1 second', capacity => 2, algorithm => algorithm,
                              storage => storage);
    COMMIT;
    PERFORM rate_limit_request('k', lim, 2, reserve => true);
    PERFORM rate_limit_request('k', lim, 2, reserve => true);
    COMMIT;
    PERFORM set_config('pg_ratelimit.fake_now', '2026-01-01 00:00:00.2', false);
    PERFORM rate_limit_define(lim, rate => 10, period => '1 second', capacity => 2, algorithm => algorithm,
                              storage => storage, rescale => rescale);
    COMMIT;
    INSERT INTO faster_results SELECT storage, algorithm, rescale, d.retry_after FROM rate_limit_check('k', lim, 1) AS d;
    PERFORM rate_limit_refund('k', lim, 2);
    UPDATE faster_results SET after_refund_allowed = d.allowed FROM rate_limit_check('k', lim, 2) AS d
     WHERE faster_results.storage = faster.storage AND faster_results.algorithm = faster.algorithm
       AND faster_results.rescale = faster.rescale;
    PERFORM rate_limit_drop(lim);
    COMMIT;
END $$;
CALL pg_temp.faster('durable', 'token_bucket', 'as_is');
CALL pg_temp.faster('durable', 'token_bucket', 'proportional');
CALL pg_temp.faster('durable', 'gcra', 'as_is');
CALL pg_temp.faster('durable', 'gcra', 'proportional');
CALL pg_temp.faster('unlogged', 'token_bucket', 'as_is');
CALL pg_temp.faster('unlogged', 'gcra', 'proportional');
CALL pg_temp.faster('memory', 'token_bucket', 'as_is');
CALL pg_temp.faster('memory', 'token_bucket', 'proportional');
CALL pg_temp.faster('memory', 'gcra', 'as_is');
CALL pg_temp.faster('memory', 'gcra', 'proportional');
SELECT * FROM faster_results ORDER BY 1, 2, 3;

-- A switch from token bucket to GCRA with another rate at once: the balance at the switch, then GCRA.
SET pg_ratelimit.fake_now = '2026-01-01 00:00:00';
SELECT rate_limit_define('switch', rate => 5, period => '1 second', capacity => 2);
SELECT allowed FROM rate_limit_request('k', 'switch', 2);
SET pg_ratelimit.fake_now = '2026-01-01 00:00:00.2';
SELECT rate_limit_define('switch', rate => 10, period => '1 second', capacity => 2, algorithm => 'gcra');
SELECT allowed, retry_after FROM rate_limit_check('k', 'switch', 2);     -- 1 held: 100 ms to the second
SELECT rate_limit_drop('switch');

-- Fixed window, 3 per minute on the minute: a key uses all 3 at 00:00; at 00:01 its next window brings 3.
-- Raised to 30 per minute (capacity 30) at 00:01:30: the key holds the 3 of the window in progress, and 30
-- more come at 00:02 (not 30 for the window that opened at 00:01, before the change).
SET pg_ratelimit.fake_now = '2026-01-01 00:00:00';
SELECT rate_limit_define('fw', rate => 3, period => '1 minute', algorithm => 'fixed_window',
                         start => '2026-01-01 00:00:00+00');
SELECT allowed FROM rate_limit_request('k', 'fw', 3);
SET pg_ratelimit.fake_now = '2026-01-01 00:01:30';
SELECT rate_limit_define('fw', rate => 30, period => '1 minute', algorithm => 'fixed_window',
                         start => '2026-01-01 00:00:00+00', rescale => 'as_is');
SELECT pg_temp.units_left('k', 'fw');
SET pg_ratelimit.fake_now = '2026-01-01 00:02:00';
SELECT pg_temp.units_left('k', 'fw');
SELECT rate_limit_drop('fw');

-- A capacity raised as_is: a key full under the old capacity (10) holds 10 at the change, and refills at
-- the rate from then on, not from its last call.
SET pg_ratelimit.fake_now = '2026-01-01 00:00:00';
SELECT rate_limit_define('cap', rate => 1, period => '1 second', capacity => 10);
SELECT allowed FROM rate_limit_request('k', 'cap', 10);
SET pg_ratelimit.fake_now = '2026-01-01 00:01:00';                    -- full again (10) since 00:00:10
SELECT rate_limit_define('cap', rate => 1, period => '1 second', capacity => 100, rescale => 'as_is');
SELECT pg_temp.units_left('k', 'cap');
SELECT rate_limit_drop('cap');

-- An override's rate changes alike: the key is brought to the change under its old numbers.
SET pg_ratelimit.fake_now = '2026-01-01 00:00:00';
SELECT rate_limit_define('tiers', rate => 1, period => '1 second', capacity => 2, max_reserved => 10);
SELECT rate_limit_override('vip', 'tiers', rate => 5, capacity => 2);
SELECT allowed FROM rate_limit_request('vip', 'tiers', 2, reserve => true);
SELECT allowed FROM rate_limit_request('vip', 'tiers', 2, reserve => true);
SET pg_ratelimit.fake_now = '2026-01-01 00:00:00.2';
SELECT rate_limit_override('vip', 'tiers', rate => 10, capacity => 2, rescale => 'as_is');
SELECT retry_after FROM rate_limit_check('vip', 'tiers', 1);            -- 200 ms, not 100
SELECT rate_limit_drop('tiers');

-- A memory token bucket made slower (10 per second -> 10 per day, same capacity): a key that used its 10
-- is full again in a day, not in a second. Cleanup ten minutes later (memory entries go once full for five
-- minutes) keeps it, by rate_limit_define and by an UPDATE of rate_limit_config alike.
SET pg_ratelimit.fake_now = '2026-01-01 00:00:00';
SELECT rate_limit_define('slower_define', rate => 10, period => '1 second', storage => 'memory');
SELECT rate_limit_define('slower_update', rate => 10, period => '1 second', storage => 'memory');
SELECT count(*) FILTER (WHERE (rate_limit_request('k', 'slower_define')).allowed) AS taken FROM generate_series(1, 10);
SELECT count(*) FILTER (WHERE (rate_limit_request('k', 'slower_update')).allowed) AS taken FROM generate_series(1, 10);
SELECT rate_limit_define('slower_define', rate => 10, period => '1 day', storage => 'memory');
UPDATE rate_limit_config SET period = '1 day' WHERE name = 'slower_update';
SET pg_ratelimit.fake_now = '2026-01-01 00:10:00';
SELECT rate_limit_cleanup('slower_define') AS deleted, rate_limit_cleanup('slower_update') AS deleted;
SELECT lim, pg_temp.units_left('k', lim) FROM unnest(ARRAY['slower_define', 'slower_update']) AS lim;
SELECT rate_limit_drop('slower_define'), rate_limit_drop('slower_update');

RESET pg_ratelimit.fake_now;
