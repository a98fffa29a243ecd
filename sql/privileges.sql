-- Who may do what. Calls run as the extension owner (SECURITY DEFINER), so applications need no rights
-- on the tables. Everyone may request and check (neither can raise anyone's allowance); giving units
-- back (refund, reset), defining limits and cleanup are for administrators unless granted.
SET timezone = 'UTC';
SELECT current_user AS admin, current_database() AS db \gset
CREATE ROLE regress_rl_app LOGIN;
GRANT CREATE ON DATABASE :"db" TO regress_rl_app;
SELECT rate_limit_define('priv', rate => 2, period => '1 hour');

SET ROLE regress_rl_app;
SELECT allowed, remaining FROM rate_limit_request('u', 'priv');
SELECT allowed, remaining FROM rate_limit_check('u', 'priv');
-- (denied as a whole: the second unit is not there, so the first is not taken either)
SELECT position, allowed, remaining FROM rate_limit_request_all(ARRAY['u', 'u'], ARRAY['priv', 'priv']);
SELECT allowed, remaining FROM rate_limit_refund('u', 'priv');
SELECT rate_limit_reset('u', 'priv');
SELECT name, rate FROM rate_limit_config WHERE name = 'priv';
SELECT * FROM rate_limit_state;
UPDATE rate_limit_config SET rate = 1000 WHERE name = 'priv';
DELETE FROM rate_limit_state;
SELECT rate_limit_define('priv', rate => 1000, period => '1 second');
SELECT rate_limit_drop('priv');
SELECT rate_limit_cleanup();
RESET ROLE;

-- An application role that uses reservations gets refund (and reset, if it resets keys).
GRANT EXECUTE ON FUNCTION rate_limit_refund(text, text, float8), rate_limit_reset(text, text) TO regress_rl_app;
SET ROLE regress_rl_app;
SELECT allowed, remaining FROM rate_limit_refund('u', 'priv');
SELECT rate_limit_reset('u', 'priv');
RESET ROLE;
REVOKE EXECUTE ON FUNCTION rate_limit_refund(text, text, float8), rate_limit_reset(text, text) FROM regress_rl_app;

-- Cleanup: rate_limit_cleanup_batches runs with its caller's rights (a SECURITY DEFINER procedure could
-- not commit) and calls rate_limit_cleanup, so a role that runs cleanup (a pg_cron job's owner) needs
-- EXECUTE on both; either alone is not enough.
SET ROLE regress_rl_app;
CALL rate_limit_cleanup_batches();
RESET ROLE;
GRANT EXECUTE ON PROCEDURE rate_limit_cleanup_batches TO regress_rl_app;
SET ROLE regress_rl_app;
CALL rate_limit_cleanup_batches();
RESET ROLE;
GRANT EXECUTE ON FUNCTION rate_limit_cleanup TO regress_rl_app;
SET ROLE regress_rl_app;
CALL rate_limit_cleanup_batches(batch_rows => 100);
SELECT rate_limit_cleanup('priv', max_rows => 10) >= 0 AS cleaned;
RESET ROLE;
REVOKE EXECUTE ON PROCEDURE rate_limit_cleanup_batches FROM regress_rl_app;
REVOKE EXECUTE ON FUNCTION rate_limit_cleanup FROM regress_rl_app;

-- The README's lockdown of who may be limited at all covers every function that consumes units (and
-- rate_limit_policy, which tells the numbers a key is limited to).
REVOKE EXECUTE ON FUNCTION rate_limit_request(text, text, float8, boolean), rate_limit_request_many(text[], text, float8[]),
    rate_limit_throttle(text, text, float8), rate_limit_check(text, text, float8), rate_limit_policy(text, text),
    rate_limit_request_all(text[], text[], float8[]), rate_limit_enforce(text, text, float8),
    rate_limit_acquire(text, text, text), rate_limit_reserve(text, text, float8, interval) FROM PUBLIC;
-- What the role may still run of the extension: releasing its own leases and reading the statistics.
SELECT p.proname FROM pg_proc p JOIN pg_depend d ON d.classid = 'pg_proc'::regclass AND d.objid = p.oid
 WHERE d.refobjid = (SELECT oid FROM pg_extension WHERE extname = 'pg_ratelimit') AND d.deptype = 'e'
   AND has_function_privilege('regress_rl_app', p.oid, 'EXECUTE') ORDER BY 1;
SET ROLE regress_rl_app;
SELECT limited FROM rate_limit_throttle('u', 'priv');
SELECT allowed FROM rate_limit_request('u', 'priv');
SELECT count(*) FROM rate_limit_request_many(ARRAY['u'], 'priv');
SELECT rate FROM rate_limit_policy('u', 'priv');
SELECT count(*) FROM rate_limit_request_all(ARRAY['u'], ARRAY['priv']);
SELECT rate_limit_enforce('u', 'priv');
SELECT allowed FROM rate_limit_acquire('u', 'priv');
SELECT allowed FROM rate_limit_reserve('u', 'priv');
RESET ROLE;
GRANT EXECUTE ON FUNCTION rate_limit_request(text, text, float8, boolean), rate_limit_request_many(text[], text, float8[]),
    rate_limit_throttle(text, text, float8), rate_limit_check(text, text, float8), rate_limit_policy(text, text),
    rate_limit_request_all(text[], text[], float8[]), rate_limit_enforce(text, text, float8),
    rate_limit_acquire(text, text, text) TO PUBLIC;
-- rate_limit_request_all only consumes, like rate_limit_request: PUBLIC may call it, and no one else holds a
-- grant on it but its owner, whatever default privileges the installing role had.
SELECT a.grantee = 0 AS to_public, a.privilege_type
  FROM pg_proc p, aclexplode(p.proacl) AS a
 WHERE p.oid = 'rate_limit_request_all(text[], text[], float8[])'::regprocedure AND a.grantee <> p.proowner;

-- Per-key tiers: setting and dropping overrides is for administrators, like rate_limit_define (42501
-- otherwise). rate_limit_override is not readable by PUBLIC (it tells every customer's plan); anyone may
-- ask rate_limit_policy for the numbers of a key they name, as they may ask rate_limit_check.
SELECT rate_limit_override('u', 'priv', 4);
SET ROLE regress_rl_app;
SELECT rate_limit_override('u', 'priv', 1000);
SELECT rate_limit_override('me', 'priv', 1000);
SELECT rate_limit_override_drop('u', 'priv');
SELECT * FROM rate_limit_override;
INSERT INTO rate_limit_override (limit_name, key, rate) VALUES ('priv', 'me', 1000);
DELETE FROM rate_limit_override;
SELECT rate, capacity, overridden FROM rate_limit_policy('u', 'priv');
RESET ROLE;
GRANT EXECUTE ON FUNCTION rate_limit_override, rate_limit_override_drop TO regress_rl_app;
SET ROLE regress_rl_app;
SELECT rate_limit_override('u', 'priv', 5);
SELECT rate FROM rate_limit_policy('u', 'priv');
SELECT rate_limit_override_drop('u', 'priv');
RESET ROLE;
REVOKE EXECUTE ON FUNCTION rate_limit_override, rate_limit_override_drop FROM regress_rl_app;
SELECT count(*) AS overrides FROM rate_limit_override WHERE limit_name = 'priv';

-- rate_limit_enforce only consumes, like rate_limit_request: everyone may call it, and the lockdown covers
-- it too. rate_limit_settle can give units back, like rate_limit_refund: only when granted.
SET ROLE regress_rl_app;
SELECT rate_limit_enforce('e', 'priv');
SELECT allowed FROM rate_limit_settle('e', 'priv', 1, 0);
RESET ROLE;
REVOKE EXECUTE ON FUNCTION rate_limit_enforce(text, text, float8) FROM PUBLIC;
SET ROLE regress_rl_app;
SELECT rate_limit_enforce('e', 'priv');
RESET ROLE;
GRANT EXECUTE ON FUNCTION rate_limit_enforce(text, text, float8) TO PUBLIC;
GRANT EXECUTE ON FUNCTION rate_limit_settle(text, text, float8, float8) TO regress_rl_app;
SET ROLE regress_rl_app;
SELECT allowed, remaining FROM rate_limit_settle('e', 'priv', 1, 0);
RESET ROLE;
REVOKE EXECUTE ON FUNCTION rate_limit_settle(text, text, float8, float8) FROM regress_rl_app;
SELECT rate_limit_reset('e', 'priv');

-- Statistics: everyone may read rate_limit_stats (totals per limit name, no key); resetting them is the
-- owner's unless granted (42501). The lockdown hides them: REVOKE SELECT on the view and EXECUTE on the
-- function behind it.
SET ROLE regress_rl_app;
SELECT limit_name, requests > 0 AS counted FROM rate_limit_stats WHERE limit_name = 'priv';
SELECT rate_limit_stats_reset('priv');
SELECT rate_limit_stats_reset();
RESET ROLE;
GRANT EXECUTE ON FUNCTION rate_limit_stats_reset(text) TO regress_rl_app;
SET ROLE regress_rl_app;
SELECT rate_limit_stats_reset('priv');
SELECT limit_name, requests FROM rate_limit_stats WHERE limit_name = 'priv';
RESET ROLE;
REVOKE EXECUTE ON FUNCTION rate_limit_stats_reset(text) FROM regress_rl_app;
REVOKE SELECT ON rate_limit_stats FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION rate_limit_stats_rows() FROM PUBLIC;
SET ROLE regress_rl_app;
SELECT count(*) FROM rate_limit_stats;
SELECT count(*) FROM rate_limit_stats_rows();
RESET ROLE;
GRANT SELECT ON rate_limit_stats TO PUBLIC;
GRANT EXECUTE ON FUNCTION rate_limit_stats_rows() TO PUBLIC;
-- Leases: everyone may acquire (it can only take a slot, like a request consumes) and release (only the
-- caller's own session lease); the lockdown covers both.
SELECT rate_limit_define('priv_leases', rate => 1, period => '1 hour', algorithm => 'concurrency');
SET ROLE regress_rl_app;
SELECT allowed, remaining FROM rate_limit_acquire('l', 'priv_leases', 'session');
SELECT rate_limit_release('l', 'priv_leases');
RESET ROLE;
REVOKE EXECUTE ON FUNCTION rate_limit_acquire(text, text, text), rate_limit_release(text, text) FROM PUBLIC;
SET ROLE regress_rl_app;
SELECT allowed FROM rate_limit_acquire('l', 'priv_leases');
SELECT rate_limit_release('l', 'priv_leases');
RESET ROLE;
GRANT EXECUTE ON FUNCTION rate_limit_acquire(text, text, text), rate_limit_release(text, text) TO PUBLIC;
SELECT rate_limit_drop('priv_leases');

-- Administrators can delegate defining limits.
GRANT EXECUTE ON FUNCTION rate_limit_define TO regress_rl_app;
SET ROLE regress_rl_app;
SELECT rate_limit_define('priv', rate => 3, period => '1 hour');
RESET ROLE;
SELECT name, rate FROM rate_limit_config WHERE name = 'priv';
REVOKE EXECUTE ON FUNCTION rate_limit_define FROM regress_rl_app;

-- A fresh session of the ordinary role: it cannot pin the clock even before the library is loaded
-- (the placeholder is refused when the library defines the setting), and a hostile search_path with
-- its own text "=" operator cannot change what the SECURITY DEFINER functions' SQL means.
\c - regress_rl_app
CREATE SCHEMA regress_rl_evil;
CREATE FUNCTION regress_rl_evil.always_equal(text, text) RETURNS boolean LANGUAGE sql AS 'SELECT true';
CREATE OPERATOR regress_rl_evil.= (LEFTARG = text, RIGHTARG = text, FUNCTION = regress_rl_evil.always_equal);
SET search_path = regress_rl_evil, pg_catalog, public;
SET pg_ratelimit.fake_now = '2000-01-01 00:00:00+00';
SELECT allowed, remaining FROM rate_limit_request('victim', 'priv');
SELECT allowed, remaining FROM rate_limit_request('attacker', 'priv');
SHOW pg_ratelimit.fake_now;
DROP SCHEMA regress_rl_evil CASCADE;
\c - :admin
SELECT key, value, ts > '2020-01-01' AS real_clock FROM rate_limit_state WHERE limit_name = 'priv' ORDER BY key;

SELECT rate_limit_drop('priv');

-- The trigger functions belong to rate_limit_config: nobody else may attach them, and where a superuser
-- does, they refuse to fire (39P01) instead of reading another table's rows as limits.
SET ROLE regress_rl_app;
CREATE TEMP TABLE seven (a int, b int, c int, d int, e int, f int, g int);
CREATE TRIGGER t BEFORE INSERT ON seven FOR EACH ROW EXECUTE FUNCTION rate_limit_config_row();
DROP TABLE seven;
RESET ROLE;
CREATE TEMP TABLE seven_admin (a int, b int, c int, d int, e int, f int, g int);
CREATE TRIGGER t BEFORE INSERT ON seven_admin FOR EACH ROW EXECUTE FUNCTION rate_limit_config_row();
INSERT INTO seven_admin VALUES (1, 2, 3, 4, 5, 6, 7);
CREATE TRIGGER u AFTER INSERT ON seven_admin FOR EACH STATEMENT EXECUTE FUNCTION rate_limit_config_changed();
DROP TRIGGER t ON seven_admin;
INSERT INTO seven_admin VALUES (1, 2, 3, 4, 5, 6, 7);
SELECT rate_limit_config_row();
DROP TABLE seven_admin;

-- In a schema of its own (which must exist first), callers need USAGE on that schema.
DROP EXTENSION pg_ratelimit;
CREATE EXTENSION pg_ratelimit SCHEMA limits;
CREATE SCHEMA limits;
CREATE EXTENSION pg_ratelimit SCHEMA limits;
SET ROLE regress_rl_app;
SELECT allowed FROM limits.rate_limit_request('u');
RESET ROLE;
GRANT USAGE ON SCHEMA limits TO regress_rl_app;
SET ROLE regress_rl_app;
SELECT allowed FROM limits.rate_limit_request('u');
SELECT name FROM limits.rate_limit_config;
RESET ROLE;
DROP EXTENSION pg_ratelimit;
DROP SCHEMA limits;
CREATE EXTENSION pg_ratelimit;

REVOKE CREATE ON DATABASE :"db" FROM regress_rl_app;
DROP ROLE regress_rl_app;
