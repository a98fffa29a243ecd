-- Renaming the extension's schema must neither break a session that already used the extension nor let
-- anyone capture its SQL: the functions run as the extension's owner (a superuser here), and after the
-- rename the old schema name is free for anybody with CREATE on the database. An attacker who creates a
-- schema of that name, with look-alike tables whose triggers try to make the attacker a superuser, must
-- get nothing: every statement of the extension resolves its tables by the schema's OID.
SET timezone = 'UTC';
SET datestyle = 'ISO';
SET intervalstyle = 'postgres';
SELECT current_database() AS db \gset
CREATE ROLE regress_rl_attacker LOGIN;
GRANT CREATE ON DATABASE :"db" TO regress_rl_attacker;

DROP EXTENSION pg_ratelimit;
CREATE SCHEMA lim;
CREATE EXTENSION pg_ratelimit SCHEMA lim;
SET pg_ratelimit.fake_now = '2026-01-01 00:00:00';

-- This session uses every statement the extension prepares: definitions (and their merge), a new key's
-- insert, an update, a reset, an uncached limit lookup, cleanup.
SELECT lim.rate_limit_define('r', rate => 5, period => '1 hour');
SELECT lim.rate_limit_define('r', rate => 5, period => '1 hour');
SELECT allowed, remaining FROM lim.rate_limit_request('k1', 'r');
SELECT allowed, remaining FROM lim.rate_limit_request('k1', 'r');
SELECT lim.rate_limit_reset('k1', 'r');
SELECT allowed, remaining FROM lim.rate_limit_check('k1', 'default');
SELECT lim.rate_limit_cleanup();
CALL lim.rate_limit_cleanup_batches(batch_rows => 1);  -- the procedure finds its function by its own schema
-- Per-key tiers: an override set, used, read back.
SELECT lim.rate_limit_override('vip', 'r', 50);
SELECT allowed, remaining FROM lim.rate_limit_request('vip', 'r');
SELECT rate FROM lim.rate_limit_policy('vip', 'r');

ALTER SCHEMA lim RENAME TO ratelimit;

-- The attacker takes the old name.
SET ROLE regress_rl_attacker;
CREATE SCHEMA lim;
CREATE TABLE lim.stolen (who name, what text);
CREATE FUNCTION lim.steal() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO lim.stolen VALUES (current_user, TG_TABLE_NAME || ' ' || TG_OP);
    BEGIN
        ALTER ROLE regress_rl_attacker SUPERUSER;
    EXCEPTION WHEN insufficient_privilege THEN
        NULL;
    END;
    RETURN coalesce(NEW, OLD);
END
$$;
CREATE TABLE lim.rate_limit_state (
    limit_name text COLLATE "C" NOT NULL, key text COLLATE "C" NOT NULL, value float8 NOT NULL,
    ts timestamptz NOT NULL, PRIMARY KEY (limit_name, key));
CREATE TABLE lim.rate_limit_config (
    name text COLLATE "C" PRIMARY KEY, algorithm text NOT NULL, rate float8 NOT NULL, period interval NOT NULL,
    capacity float8 NOT NULL, max_reserved float8, start timestamptz);
INSERT INTO lim.rate_limit_config VALUES ('r', 'token_bucket', 1e9, '1 second', 1e9, NULL, NULL),
                                         ('r2', 'token_bucket', 1e9, '1 second', 1e9, NULL, NULL);
CREATE TRIGGER steal BEFORE INSERT OR UPDATE OR DELETE ON lim.rate_limit_state
    FOR EACH ROW EXECUTE FUNCTION lim.steal();
CREATE TRIGGER steal BEFORE INSERT OR UPDATE OR DELETE ON lim.rate_limit_config
    FOR EACH ROW EXECUTE FUNCTION lim.steal();
CREATE TRIGGER steal_truncate BEFORE TRUNCATE ON lim.rate_limit_state
    FOR EACH STATEMENT EXECUTE FUNCTION lim.steal();
CREATE TABLE lim.rate_limit_override (
    limit_name text COLLATE "C" NOT NULL, key text COLLATE "C" NOT NULL, rate float8 NOT NULL, capacity float8,
    max_reserved float8, PRIMARY KEY (limit_name, key));
INSERT INTO lim.rate_limit_override VALUES ('r', 'k2', 1e9, NULL, NULL), ('r', 'vip', 1e9, NULL, NULL);
CREATE TRIGGER steal BEFORE INSERT OR UPDATE OR DELETE ON lim.rate_limit_override
    FOR EACH ROW EXECUTE FUNCTION lim.steal();
-- A look-alike of the function rate_limit_cleanup_batches calls, for a procedure that kept the old name.
CREATE FUNCTION lim.rate_limit_cleanup(limit_name text DEFAULT NULL, max_rows bigint DEFAULT NULL) RETURNS bigint
LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO lim.stolen VALUES (current_user, 'rate_limit_cleanup');
    RETURN 0;
END
$$;
DELETE FROM lim.stolen;
RESET ROLE;

-- The same session goes on using the extension under its new name: everything works, on its own tables.
SELECT allowed, remaining FROM ratelimit.rate_limit_request('k2', 'r');
SELECT allowed, remaining FROM ratelimit.rate_limit_request('k2', 'r');
SELECT allowed, remaining FROM ratelimit.rate_limit_refund('k2', 'r');
SELECT ratelimit.rate_limit_reset('k2', 'r');
SELECT allowed, remaining FROM ratelimit.rate_limit_request('k3', 'r', 5);
SELECT ratelimit.rate_limit_define('r2', rate => 1, period => '1 hour');
SELECT ratelimit.rate_limit_define('r2', rate => 2, period => '1 hour');
SELECT ratelimit.rate_limit_define('r2', rate => 2, period => '1 hour', algorithm => 'fixed_window');
SELECT allowed, remaining FROM ratelimit.rate_limit_request('k', 'r2');
SELECT allowed, remaining FROM ratelimit.rate_limit_check('k', 'r2');
SELECT limit_name, key, value FROM ratelimit.rate_limit_state ORDER BY limit_name, key;
SET pg_ratelimit.fake_now = '2026-01-01 02:00:00';
SELECT ratelimit.rate_limit_cleanup();
SELECT ratelimit.rate_limit_cleanup('r');
SELECT ratelimit.rate_limit_cleanup('r', max_rows => 1) >= 0 AS bounded_cleanup;
CALL ratelimit.rate_limit_cleanup_batches(batch_rows => 1);
SELECT ratelimit.rate_limit_drop('r2');
SELECT allowed, remaining FROM ratelimit.rate_limit_request('vip', 'r');
SELECT k AS key, p.rate FROM unnest(ARRAY['vip', 'k2']) AS k, LATERAL ratelimit.rate_limit_policy(k, 'r') AS p;
SELECT ratelimit.rate_limit_override('vip2', 'r', 60);
SELECT ratelimit.rate_limit_override_drop('vip2', 'r');
SELECT limit_name, key, rate FROM ratelimit.rate_limit_override ORDER BY key;
-- rate_limit_request_all too, granted and denied (its internal subtransaction rolled back).
SELECT position, key, allowed FROM ratelimit.rate_limit_request_all(ARRAY['k3', 'vip'], ARRAY['r', 'r']);
SELECT position, key, allowed FROM ratelimit.rate_limit_request_all(ARRAY['k3', 'vip'], ARRAY['r', 'r'], ARRAY[1, 50]);

-- Nothing reached the attacker's tables, no trigger of theirs ran, and they are no superuser.
SELECT who, what FROM lim.stolen;
SELECT count(*) AS attacker_state_rows FROM lim.rate_limit_state;
SELECT name, rate FROM lim.rate_limit_config ORDER BY name;
SELECT key, rate FROM lim.rate_limit_override ORDER BY key;
SELECT rolsuper FROM pg_roles WHERE rolname = 'regress_rl_attacker';
SELECT name, rate FROM ratelimit.rate_limit_config ORDER BY name;

-- A new session finds the extension under its new name too.
\c
SET pg_ratelimit.fake_now = '2026-01-01 02:00:00';
SELECT allowed, remaining FROM ratelimit.rate_limit_request('k4', 'r');
SELECT count(*) AS stolen FROM lim.stolen;

DROP SCHEMA lim CASCADE;
DROP EXTENSION pg_ratelimit;
DROP SCHEMA ratelimit;
CREATE EXTENSION pg_ratelimit;
REVOKE CREATE ON DATABASE :"db" FROM regress_rl_attacker;
DROP ROLE regress_rl_attacker;
