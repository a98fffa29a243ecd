-- Per-key tiers: rate_limit_override gives one key other numbers for a named limit. (The server runs with
-- shared_preload_libraries = 'pg_ratelimit', which memory limits need.)
SET timezone = 'UTC';
SET datestyle = 'ISO';
SET intervalstyle = 'postgres';
SET extra_float_digits = 0;
SET pg_ratelimit.fake_now = '2026-01-01 00:00:00';
-- The units a key holds now (remaining counts after the check's own unit, when allowed).
CREATE FUNCTION pg_temp.units_left(key text, lim text) RETURNS bigint LANGUAGE sql
    AS $$ SELECT d.remaining + d.allowed::int FROM rate_limit_check(key, lim) AS d $$;
-- How many requests of `cost` a key is granted in a row, now (at most 1000).
CREATE FUNCTION pg_temp.burst(key text, lim text, cost float8 DEFAULT 1) RETURNS int LANGUAGE plpgsql AS $$
DECLARE
    n int := 0;
BEGIN
    WHILE n < 1000 AND (rate_limit_request(key, lim, cost)).allowed LOOP
        n := n + 1;
    END LOOP;
    RETURN n;
END
$$;

-- A token bucket with a burst of twice its rate and reservations up to a quarter of its capacity. gold's
-- override gives it ten times the rate; its capacity and max_reserved, left NULL, scale alike.
SELECT rate_limit_define('tiers', rate => 10, period => '1 minute', capacity => 20, max_reserved => 5);
SELECT rate_limit_override('gold', 'tiers', 100);
SELECT rate_limit_override('silver', 'tiers', 30, capacity => 30, max_reserved => 'Infinity');
SELECT limit_name, key, rate, capacity, max_reserved FROM rate_limit_override ORDER BY limit_name, key;
SELECT k AS key, p.* FROM unnest(ARRAY['gold', 'silver', 'bronze']) AS k, LATERAL rate_limit_policy(k, 'tiers') AS p;
SELECT pg_temp.burst('gold', 'tiers') AS gold, pg_temp.burst('silver', 'tiers') AS silver,
       pg_temp.burst('bronze', 'tiers') AS bronze;
-- Refill at each key's own rate: 6 seconds give gold 10 units, silver 3, bronze 1.
SET pg_ratelimit.fake_now = '2026-01-01 00:00:06';
SELECT k AS key, pg_temp.units_left(k, 'tiers') FROM unnest(ARRAY['gold', 'silver', 'bronze']) AS k;
-- Reservations within each key's own max_reserved: gold 50 (5 scaled by 10), silver unlimited, bronze 5.
SELECT k AS key, (rate_limit_request(k, 'tiers', c, reserve => true)).allowed
  FROM (VALUES ('gold', 60), ('gold', 1), ('silver', 30), ('silver', 30), ('bronze', 7), ('bronze', 5)) AS v (k, c);
-- A cost above the key's own capacity can never succeed: refused for that key only.
SELECT allowed FROM rate_limit_check('gold', 'tiers', 200);
SELECT allowed FROM rate_limit_check('gold', 'tiers', 201);
SELECT allowed FROM rate_limit_check('bronze', 'tiers', 150);
-- rate_limit_throttle reports the key's own capacity as its limit.
SELECT "limit" FROM rate_limit_throttle('gold', 'tiers', 1);
SELECT "limit" FROM rate_limit_throttle('nobody', 'tiers', 1);

-- Every algorithm: the override's numbers, the limit's period, grid and algorithm.
SELECT rate_limit_define('tb', rate => 5, period => '1 minute');
SELECT rate_limit_define('gc', rate => 5, period => '1 minute', algorithm => 'gcra');
SELECT rate_limit_define('fw', rate => 5, period => '1 hour', algorithm => 'fixed_window', capacity => 8,
                         start => '2026-01-01 00:00:00');
SELECT rate_limit_define('sw', rate => 5, period => '1 minute', algorithm => 'sliding_window');
SELECT rate_limit_override('vip', l, 12) FROM unnest(ARRAY['tb', 'gc', 'fw', 'sw']) AS l;
SELECT l AS lim, p.algorithm, p.rate, p.period, p.capacity, p.max_reserved,
       pg_temp.burst('vip', l) AS vip, pg_temp.burst('std', l) AS std
  FROM unnest(ARRAY['tb', 'gc', 'fw', 'sw']) AS l, LATERAL rate_limit_policy('vip', l) AS p;
-- An hour later the fixed window opened again (+12 for vip, +5 for std); the sliding window drained; GCRA
-- and the token bucket refilled.
SET pg_ratelimit.fake_now = '2026-01-01 01:00:00';
SELECT l AS lim, pg_temp.units_left('vip', l) AS vip, pg_temp.units_left('std', l) AS std
  FROM unnest(ARRAY['tb', 'gc', 'fw', 'sw']) AS l;
-- A sliding window's capacity is its rate: an override may not say otherwise, and NULL follows.
SELECT rate_limit_override('bad', 'sw', 12, capacity => 20);
SELECT rate_limit_override('bad', 'sw', 12, max_reserved => 1);
-- GCRA and the token bucket decide alike for an overridden key too.
SELECT (SELECT array_agg(d.allowed ORDER BY i) FROM generate_series(1, 15) AS i,
               LATERAL rate_limit_request('twin', 'tb', 1) AS d)
     = (SELECT array_agg(d.allowed ORDER BY i) FROM generate_series(1, 15) AS i,
               LATERAL rate_limit_request('twin', 'gc', 1) AS d) AS same_decisions
  FROM (SELECT rate_limit_override('twin', 'tb', 9), rate_limit_override('twin', 'gc', 9)) AS setup;

-- NULL capacity and max_reserved follow the limit, scaled by the rates: unlimited stays unlimited, none
-- stays none; 'Infinity' is unlimited whatever the limit says, 0 none.
SELECT rate_limit_define('scale', rate => 4, period => '1 minute', capacity => 6);
SELECT rate_limit_override('a', 'scale', 8);
SELECT rate_limit_override('b', 'scale', 8, max_reserved => 0);
SELECT capacity, max_reserved FROM rate_limit_policy('a', 'scale');
SELECT capacity, max_reserved FROM rate_limit_policy('b', 'scale');
SELECT rate_limit_define('scale', rate => 4, period => '1 minute', capacity => 6, max_reserved => 0);
SELECT capacity, max_reserved FROM rate_limit_policy('a', 'scale');
SELECT rate_limit_define('scale', rate => 2, period => '1 minute', capacity => 6, max_reserved => 3);
SELECT capacity, max_reserved FROM rate_limit_policy('a', 'scale');   -- the limit's ratio 3, rate 8
SELECT rate_limit_override('a', 'scale', 8, max_reserved => 'Infinity');
SELECT capacity, max_reserved FROM rate_limit_policy('a', 'scale');
SELECT max_reserved FROM rate_limit_override WHERE limit_name = 'scale' ORDER BY key;

-- Rescaling the key's state when its override is set, changed or dropped (rescale as rate_limit_define's).
SET pg_ratelimit.fake_now = '2026-01-01 02:00:00';
SELECT rate_limit_define('rs', rate => 100, period => '1 hour');
SELECT allowed, remaining FROM rate_limit_request('p', 'rs', 60);
SELECT allowed, remaining FROM rate_limit_request('q', 'rs', 60);
SELECT allowed, remaining FROM rate_limit_request('r', 'rs', 60);
SELECT key, value FROM rate_limit_state WHERE limit_name = 'rs' ORDER BY key;
-- proportional: 40 of 100 become 80 of 200; as_is: 40 of 200; reset: full.
SELECT rate_limit_override('p', 'rs', 200);
SELECT rate_limit_override('q', 'rs', 200, rescale => 'as_is');
SELECT rate_limit_override('r', 'rs', 200, rescale => 'reset');
SELECT key, value FROM rate_limit_state WHERE limit_name = 'rs' ORDER BY key;
SELECT k AS key, pg_temp.units_left(k, 'rs') FROM unnest(ARRAY['p', 'q', 'r']) AS k;
-- A change of the override rescales from the old override; an unknown rescale rule is refused first.
SELECT rate_limit_override('p', 'rs', 50);
SELECT rate_limit_override('p', 'rs', 50, rescale => 'keep');
SELECT pg_temp.units_left('p', 'rs');
-- Dropping carries the key back to the limit proportionally; dropping again reports there was none.
SELECT rate_limit_override_drop('p', 'rs');
SELECT rate_limit_override_drop('p', 'rs');
SELECT pg_temp.units_left('p', 'rs'), overridden FROM rate_limit_policy('p', 'rs');
-- Rolled back: the override and the rescale go together.
BEGIN;
SELECT rate_limit_override('q', 'rs', 1000);
SELECT pg_temp.units_left('q', 'rs');
ROLLBACK;
SELECT pg_temp.units_left('q', 'rs'), rate FROM rate_limit_policy('q', 'rs');

-- Redefining the limit keeps its overrides; a NULL capacity follows the new definition, an explicit one
-- stays; a redefinition that makes an override invalid fails naming the key, and changes nothing.
SELECT rate_limit_define('re', rate => 10, period => '1 minute', capacity => 20);
SELECT rate_limit_override('follows', 're', 30);
SELECT rate_limit_override('fixed', 're', 30, capacity => 40);
SELECT allowed FROM rate_limit_request('follows', 're', 30);
SELECT allowed FROM rate_limit_request('fixed', 're', 20);
SELECT rate_limit_define('re', rate => 10, period => '1 minute', capacity => 40);    -- proportional
SELECT k AS key, p.capacity, pg_temp.units_left(k, 're') FROM unnest(ARRAY['follows', 'fixed']) AS k,
       LATERAL rate_limit_policy(k, 're') AS p;
SELECT rate_limit_define('re', rate => 10, period => '1 minute', algorithm => 'sliding_window');
SELECT rate_limit_override('tiny', 're', 1e-7);
SELECT rate_limit_define('re', rate => 10, period => '1 minute', capacity => 40, shards => 256);
SELECT rate_limit_define('re', rate => 10, period => '1 minute', capacity => 1e12);
SELECT rate_limit_override_drop('tiny', 're');
SELECT algorithm, rate, capacity, shards FROM rate_limit_config WHERE name = 're';
SELECT count(*) AS overrides FROM rate_limit_override WHERE limit_name = 're';
-- Another algorithm starts every key afresh, overridden or not.
SELECT rate_limit_override('fixed', 're', 30);
SELECT rate_limit_define('re', rate => 10, period => '1 minute', algorithm => 'sliding_window');
SELECT k AS key, p.algorithm, p.capacity, pg_temp.units_left(k, 're') FROM unnest(ARRAY['follows', 'fixed']) AS k,
       LATERAL rate_limit_policy(k, 're') AS p;
-- Dropping the limit drops its overrides; a limit defined again under the name starts without any, even
-- those of a limit deleted from rate_limit_config by hand.
SELECT rate_limit_drop('re');
SELECT count(*) AS overrides FROM rate_limit_override WHERE limit_name = 're';
SELECT rate_limit_define('re', rate => 10, period => '1 minute');
SELECT rate_limit_override('k', 're', 20);
DELETE FROM rate_limit_config WHERE name = 're';
SELECT count(*) AS orphans FROM rate_limit_override WHERE limit_name = 're';
SELECT rate_limit_define('re', rate => 10, period => '1 minute');
SELECT count(*) AS overrides FROM rate_limit_override WHERE limit_name = 're';
SELECT rate, overridden FROM rate_limit_policy('k', 're');

-- Shards divide the override as they divide the limit: a request is served by one shard.
SELECT rate_limit_define('sh', rate => 8, period => '1 minute', shards => 4);
SELECT rate_limit_override('big', 'sh', 80);
SELECT allowed FROM rate_limit_check('big', 'sh', 20);
SELECT allowed FROM rate_limit_check('big', 'sh', 21);
SELECT allowed FROM rate_limit_check('small', 'sh', 3);
SELECT pg_temp.burst('big', 'sh', 5) AS big, pg_temp.burst('small', 'sh', 1) AS small;
SELECT rate_limit_override('tiny', 'sh', 1e-9 * 3);

-- Every storage decides alike for overridden keys; the rescale of a memory key happens at commit.
SELECT rate_limit_define('st_' || s, rate => 10, period => '1 minute', storage => s)
  FROM unnest(ARRAY['durable', 'unlogged', 'memory']) AS s;
SELECT rate_limit_override('k', 'st_' || s, 40) FROM unnest(ARRAY['durable', 'unlogged', 'memory']) AS s;
SELECT s AS storage, pg_temp.burst('k', 'st_' || s, 3) AS k, pg_temp.burst('o', 'st_' || s, 3) AS o
  FROM unnest(ARRAY['durable', 'unlogged', 'memory']) AS s;
SET pg_ratelimit.fake_now = '2026-01-01 02:00:30';                       -- k: 20 refilled of 40
SELECT rate_limit_override('k', 'st_' || s, 80) FROM unnest(ARRAY['durable', 'unlogged', 'memory']) AS s;
SELECT s AS storage, pg_temp.units_left('k', 'st_' || s) AS k FROM unnest(ARRAY['durable', 'unlogged', 'memory']) AS s;
SELECT rate_limit_override_drop('k', 'st_' || s) FROM unnest(ARRAY['durable', 'unlogged', 'memory']) AS s;
SELECT s AS storage, pg_temp.units_left('k', 'st_' || s) AS k FROM unnest(ARRAY['durable', 'unlogged', 'memory']) AS s;
SELECT rate_limit_override('k', 'st_' || s, 20, rescale => 'reset') FROM unnest(ARRAY['durable', 'unlogged', 'memory']) AS s;
SELECT s AS storage, pg_temp.units_left('k', 'st_' || s) AS k FROM unnest(ARRAY['durable', 'unlogged', 'memory']) AS s;
-- A redefinition of a memory limit rescales an overridden key between its own limits at commit: k keeps
-- its override of 20 (5 left after 15), o follows the limit (6 of 10 become 12 of 20).
SELECT allowed FROM rate_limit_request('k', 'st_memory', 15);
SELECT rate_limit_define('st_memory', rate => 20, period => '1 minute', storage => 'memory');
SELECT k AS key, pg_temp.units_left(k, 'st_memory') FROM unnest(ARRAY['k', 'o']) AS k;

-- rate_limit_request_many: each key under its own limit.
SELECT rate_limit_define('many', rate => 2, period => '1 hour');
SELECT rate_limit_override('vip', 'many', 4);
SELECT key, position, allowed, remaining
  FROM rate_limit_request_many(ARRAY['vip', 'std', 'vip', 'std', 'vip', 'std', 'vip', 'vip'], 'many');
SELECT key, allowed FROM rate_limit_request_many(ARRAY['std', 'vip'], 'many', ARRAY[3, 3]);

-- rate_limit_cleanup judges a key full by its own capacity: 50 of the override's 100 is not full (it
-- would be under the limit's 10), 100 of 100 is.
SELECT rate_limit_define('cl', rate => 10, period => '1 hour');
SELECT rate_limit_override('vip', 'cl', 10, capacity => 100);
SELECT allowed FROM rate_limit_request('vip', 'cl', 50);
SELECT allowed FROM rate_limit_request('std', 'cl', 5);
SET pg_ratelimit.fake_now = '2026-01-01 03:00:00';    -- std full, vip about 60 of 100
SELECT rate_limit_cleanup('cl');
SELECT key FROM rate_limit_state WHERE limit_name = 'cl' ORDER BY key;
SELECT pg_temp.units_left('vip', 'cl');
SET pg_ratelimit.fake_now = '2026-01-01 08:00:00';    -- vip full
SELECT rate_limit_cleanup() > 0 AS deleted_some;
SELECT count(*) FROM rate_limit_state WHERE limit_name = 'cl';

-- Direct DML by the owner is seen at the next statement, like changes of rate_limit_config.
SELECT rate_limit_define('dml', rate => 10, period => '1 minute');
SELECT rate FROM rate_limit_policy('k', 'dml');
INSERT INTO rate_limit_override (limit_name, key, rate) VALUES ('dml', 'k', 33);
SELECT rate, capacity FROM rate_limit_policy('k', 'dml');
UPDATE rate_limit_override SET capacity = 50 WHERE limit_name = 'dml';
SELECT rate, capacity FROM rate_limit_policy('k', 'dml');
BEGIN;
DELETE FROM rate_limit_override WHERE limit_name = 'dml';
SELECT rate, overridden FROM rate_limit_policy('k', 'dml');
ROLLBACK;
SELECT rate, overridden FROM rate_limit_policy('k', 'dml');
TRUNCATE rate_limit_override;
SELECT rate, overridden, limit_has_overrides FROM rate_limit_policy('k', 'dml');
-- A row written by hand that makes an invalid limit fails that key's calls (22023 naming it), no other.
INSERT INTO rate_limit_override (limit_name, key, rate, capacity) VALUES ('sw', 'hand', 5, 9);
SELECT allowed FROM rate_limit_request('hand', 'sw');
SELECT allowed FROM rate_limit_request('other', 'sw');
DELETE FROM rate_limit_override WHERE key = 'hand';

-- Bad input, in the order the arguments come (sql/bad_input_table.sql crosses every value).
SELECT rate_limit_override(NULL, 'tb', 1);
SELECT rate_limit_override('k', NULL, 1);
SELECT rate_limit_override('k', '', 1);
SELECT rate_limit_override('k', 'tb', NULL);
SELECT rate_limit_override('k', 'tb', r) FROM unnest(ARRAY['NaN', 'Infinity', '-1', '0', '1e300']::float8[]) AS r;
SELECT rate_limit_override('k', 'tb', 1, capacity => 'NaN');
SELECT rate_limit_override('k', 'tb', 1, capacity => 1e13);
SELECT rate_limit_override('k', 'tb', 1, max_reserved => -1);
SELECT rate_limit_override('k', 'tb', 1, max_reserved => 'NaN');
SELECT rate_limit_override('k', 'tb', 1e12);             -- capacity scaled: 1e12 is still valid
SELECT rate_limit_override('k', 'tb', 1e12, capacity => 1e12);
SELECT rate_limit_override('k', 'no_such_limit', 1);
SELECT rate_limit_override(repeat('k', 1025), 'tb', 1);
SELECT rate_limit_override('k', repeat('n', 129), 1);
SELECT rate_limit_override_drop(NULL, 'tb');
SELECT rate_limit_override_drop('k', NULL);
SELECT rate_limit_override_drop('k', 'no_such_limit');
SELECT rate_limit_policy(NULL, 'tb');
SELECT rate_limit_policy('k', NULL);
SELECT rate_limit_policy('k', 'no_such_limit');

-- The table is the extension's: what the extension cannot honour is refused (55000), never crashed on.
ALTER TABLE rate_limit_override ADD COLUMN note text;                    -- harmless
SELECT rate_limit_override('col', 'tb', 7);
SELECT rate, note FROM rate_limit_override WHERE key = 'col';
ALTER TABLE rate_limit_override DROP COLUMN note;
BEGIN;
ALTER TABLE rate_limit_override DROP COLUMN capacity;
SELECT rate FROM rate_limit_policy('col', 'tb');
ROLLBACK;
BEGIN;
CREATE FUNCTION pg_temp.noop() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RETURN NEW; END $$;
CREATE TRIGGER noop BEFORE INSERT ON rate_limit_override FOR EACH ROW EXECUTE FUNCTION pg_temp.noop();
SELECT rate_limit_override('col', 'tb', 8);
ROLLBACK;
BEGIN;
ALTER EXTENSION pg_ratelimit DROP TABLE rate_limit_override;
SELECT rate FROM rate_limit_policy('col', 'tb');
ROLLBACK;
BEGIN;
ALTER EXTENSION pg_ratelimit DROP TABLE rate_limit_override;
DROP TABLE rate_limit_override;
SELECT allowed FROM rate_limit_request('col', 'tb');
ROLLBACK;
REINDEX TABLE CONCURRENTLY rate_limit_override;
SELECT rate FROM rate_limit_policy('col', 'tb');
-- The trigger function is for the extension's table only.
CREATE TEMP TABLE other (a int);
CREATE TRIGGER t AFTER INSERT ON other FOR EACH STATEMENT EXECUTE FUNCTION rate_limit_override_changed();
INSERT INTO other VALUES (1);
SELECT rate_limit_override_changed();

-- Clean up.
SELECT rate_limit_drop(l) FROM unnest(ARRAY['tiers', 'tb', 'gc', 'fw', 'sw', 'scale', 'rs', 're', 'sh', 'st_durable',
                                            'st_unlogged', 'st_memory', 'many', 'cl', 'dml']) AS l;
SELECT count(*) AS overrides_left FROM rate_limit_override;
RESET pg_ratelimit.fake_now;
