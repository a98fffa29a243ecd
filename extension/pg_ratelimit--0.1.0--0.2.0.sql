-- pg_ratelimit 0.1.0 -> 0.2.0 (ALTER EXTENSION pg_ratelimit UPDATE). What 0.2.0 adds to 0.1.0's objects;
-- pg_ratelimit--0.2.0.sql is the same result for a new installation.
\echo Use "ALTER EXTENSION pg_ratelimit UPDATE" to load this file. \quit

-- A reservation bounded in time: for callers that wait (throttle) instead of failing. Consumes nothing
-- unless the units are due within max_wait, so a waiter that gives up has nothing to give back.
CREATE FUNCTION @extschema@.rate_limit_reserve(
    key text, limit_name text DEFAULT 'default', cost float8 DEFAULT 1, max_wait interval DEFAULT NULL)
RETURNS @extschema@.rate_limit_decision
AS 'MODULE_PATHNAME', 'rate_limit_reserve' LANGUAGE C VOLATILE SECURITY DEFINER;
COMMENT ON FUNCTION @extschema@.rate_limit_reserve(text, text, float8, interval) IS
    'reserves cost units for key if they are due within max_wait (retry_after: when to act); otherwise denied, consuming nothing (ROLLBACK undoes it, except for a limit with memory storage)';
GRANT EXECUTE ON FUNCTION @extschema@.rate_limit_reserve TO PUBLIC;
