-- Infinite intervals: PostgreSQL 17 and later accept 'infinity' and '-infinity' as intervals, which 15
-- and 16 refuse as input (22007, before any call). The extension refuses an infinite period or jitter with
-- its own message (22023), and takes an infinite max_wait as no bound and a negative one as an error.
-- expected/infinite_intervals.out is 15 and 16's output, expected/infinite_intervals_1.out 17 and later's.
CREATE FUNCTION pg_temp.outcome(call text) RETURNS text LANGUAGE plpgsql AS $$
BEGIN
    EXECUTE call;
    RETURN 'ok';
EXCEPTION WHEN OTHERS THEN
    RETURN sqlstate || ': ' || sqlerrm;
END $$;
SELECT call, pg_temp.outcome(call) FROM (VALUES
    ($$SELECT rate_limit_define('inf', 1, 'infinity'::interval)$$),
    ($$SELECT rate_limit_define('inf', 1, '-infinity'::interval)$$),
    ($$SELECT rate_limit_define('inf', 1, '1 hour', jitter => 'infinity'::interval)$$),
    ($$SELECT rate_limit_define('inf', 1, '1 hour', jitter => '-infinity'::interval)$$),
    ($$SELECT rate_limit_define('inf', 1, '1 hour')$$),
    ($$SELECT allowed FROM rate_limit_reserve('k', 'inf', 1, 'infinity'::interval)$$),
    ($$SELECT allowed FROM rate_limit_reserve('k', 'inf', 1, '-infinity'::interval)$$),
    ($$UPDATE rate_limit_config SET period = 'infinity' WHERE name = 'inf'$$),
    ($$SELECT rate_limit_drop('inf')$$)) AS calls(call);
