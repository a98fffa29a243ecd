-- rate_limit_enforce: nothing when allowed (consuming exactly as rate_limit_request), SQLSTATE RL001 with a
-- JSON DETAIL and a HINT when denied; the error rolls the caller's transaction back; a trigger that limits
-- INSERTs per user; every storage mode.
SET timezone = 'UTC';
SET intervalstyle = 'postgres';
SET pg_ratelimit.fake_now = '2026-01-01 00:00:00+00';
SELECT rate_limit_define('api_' || s, 3, '1 minute', storage => s),
       rate_limit_define('fw_' || s, 2, '1 hour', algorithm => 'fixed_window', start => '2026-01-01+00', storage => s),
       rate_limit_define('sh_' || s, 8, '1 minute', shards => 4, storage => s)
  FROM unnest(ARRAY['durable', 'unlogged', 'memory']) AS s;

-- Allowed: returns nothing and consumes what rate_limit_request would (after 2 of 3, the check shows 0:
-- what a request would leave).
SELECT rate_limit_enforce('k', 'api_durable');
SELECT rate_limit_enforce('k', 'api_durable');
SELECT allowed, remaining FROM rate_limit_check('k', 'api_durable');
SELECT rate_limit_enforce('k', 'api_durable');
-- Denied: RL001, the message, the DETAIL (JSON) and the HINT.
SELECT rate_limit_enforce('k', 'api_durable');
\echo :LAST_ERROR_SQLSTATE
-- The DETAIL parses as JSON and carries the limit, the key and retry_after (20 s for one unit here).
CREATE FUNCTION pg_temp.enforce_error(key text, limit_name text, cost float8 DEFAULT 1)
RETURNS TABLE (state text, message text, detail jsonb, hint text) LANGUAGE plpgsql AS $$
BEGIN
    PERFORM rate_limit_enforce(key, limit_name, cost);
    state := 'none';
    RETURN NEXT;
EXCEPTION WHEN SQLSTATE 'RL001' THEN
    GET STACKED DIAGNOSTICS state = RETURNED_SQLSTATE, message = MESSAGE_TEXT, detail = PG_EXCEPTION_DETAIL,
                            hint = PG_EXCEPTION_HINT;
    RETURN NEXT;
END
$$;
SELECT * FROM pg_temp.enforce_error('k', 'api_durable');
SELECT detail->>'limit' AS "limit", detail->>'key' AS key, (detail->>'retry_after')::numeric AS retry_after
  FROM pg_temp.enforce_error('k', 'api_durable');
-- retry_after is exact: a denied cost of 2 waits 40 s; 20 s later one unit is back, and allowed again.
SELECT (detail->>'retry_after')::numeric AS retry_after FROM pg_temp.enforce_error('k', 'api_durable', 2);
SET pg_ratelimit.fake_now = '2026-01-01 00:00:20+00';
SELECT state FROM pg_temp.enforce_error('k', 'api_durable');
SELECT (detail->>'retry_after')::numeric AS retry_after FROM pg_temp.enforce_error('k', 'api_durable');

-- Keys that would break a hand-made format: quotes, semicolons, backslashes, newlines, braces, non-ASCII.
-- The message quotes them as JSON strings (one line); the DETAIL holds the whole key.
SELECT rate_limit_define('one', 1, '1 hour');
SELECT rate_limit_enforce(E'a"b;c=d\\e\nf{}é', 'one');
SELECT message, detail->>'key' = E'a"b;c=d\\e\nf{}é' AS key_intact
  FROM pg_temp.enforce_error(E'a"b;c=d\\e\nf{}é', 'one');
-- A long key is clipped to 64 bytes in the message, whole in the DETAIL.
SELECT rate_limit_enforce(repeat('x', 1000), 'one');
SELECT message, length(detail->>'key') AS key_length FROM pg_temp.enforce_error(repeat('x', 1000), 'one');

-- Raising rolls back the caller's transaction: the first enforce's unit is given back with it. (A check's
-- remaining is what a request would leave: 0 after one unit of two, 1 once the unit is back.)
SELECT rate_limit_define('two', 2, '1 hour');
BEGIN;
SELECT rate_limit_enforce('t', 'two');
SELECT remaining FROM rate_limit_check('t', 'two');
SELECT rate_limit_enforce('t', 'two', 2);
COMMIT;
SELECT remaining FROM rate_limit_check('t', 'two');
SELECT count(*) AS rows FROM rate_limit_state WHERE limit_name = 'two';

-- A trigger that limits INSERTs per user: 2 posts per hour per author.
SELECT rate_limit_define('posts_per_user', 2, '1 hour', algorithm => 'fixed_window', start => '2026-01-01+00');
CREATE TABLE posts (id serial PRIMARY KEY, author text NOT NULL, body text);
CREATE FUNCTION posts_rate_limit() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM rate_limit_enforce(NEW.author, 'posts_per_user');
    RETURN NEW;
END
$$;
CREATE TRIGGER posts_rate_limit BEFORE INSERT ON posts FOR EACH ROW EXECUTE FUNCTION posts_rate_limit();
\set SHOW_CONTEXT never
INSERT INTO posts (author, body) VALUES ('alice', 'one');
INSERT INTO posts (author, body) VALUES ('alice', 'two');
INSERT INTO posts (author, body) VALUES ('alice', 'three');
\echo :LAST_ERROR_SQLSTATE
INSERT INTO posts (author, body) VALUES ('bob', 'one');
-- A statement of several rows is all or nothing: bob's second post passes, his third fails the statement,
-- and his second post's unit rolls back with it.
INSERT INTO posts (author, body) VALUES ('bob', 'two'), ('bob', 'three');
SELECT author, body FROM posts ORDER BY id;
SELECT remaining FROM rate_limit_check('bob', 'posts_per_user');
-- The next window (on the hour) lets alice post again.
SET pg_ratelimit.fake_now = '2026-01-01 01:00:00+00';
INSERT INTO posts (author, body) VALUES ('alice', 'next hour');
SELECT count(*) AS alice_posts FROM posts WHERE author = 'alice';
\set SHOW_CONTEXT errors
DROP TABLE posts;
DROP FUNCTION posts_rate_limit();

-- Every storage mode and a sharded limit: the same calls, the same outcomes (memory keys do not roll back).
SET pg_ratelimit.fake_now = '2026-01-01 00:00:00+00';
CREATE FUNCTION pg_temp.enforce_script(s text) RETURNS TABLE (call text, outcome text) LANGUAGE plpgsql AS $$
DECLARE
    e record;
BEGIN
    FOR i IN 1..4 LOOP
        SELECT * INTO e FROM pg_temp.enforce_error('m', 'api_' || s);
        call := 'api #' || i; outcome := e.state || coalesce(' ' || (e.detail->>'retry_after'), ''); RETURN NEXT;
    END LOOP;
    FOR i IN 1..3 LOOP
        SELECT * INTO e FROM pg_temp.enforce_error('m', 'fw_' || s);
        call := 'fw #' || i; outcome := e.state || coalesce(' ' || (e.detail->>'retry_after'), ''); RETURN NEXT;
    END LOOP;
    FOR i IN 1..5 LOOP  -- 4 shards of 2: each serves one cost of 2
        SELECT * INTO e FROM pg_temp.enforce_error('m', 'sh_' || s, 2);
        call := 'sh 2 #' || i; outcome := e.state || coalesce(' ' || (e.detail->>'retry_after'), ''); RETURN NEXT;
    END LOOP;
    call := 'api left'; outcome := (rate_limit_check('m', 'api_' || s)).remaining; RETURN NEXT;
END
$$;
SELECT s AS storage, string_agg(call || ': ' || outcome, ', ' ORDER BY n) AS outcomes
  FROM unnest(ARRAY['durable', 'unlogged', 'memory']) AS s, pg_temp.enforce_script(s) WITH ORDINALITY AS r (call, outcome, n)
 GROUP BY s ORDER BY s;
-- In memory, a rolled-back transaction keeps what it consumed (memory limits are not transactional).
BEGIN;
SELECT rate_limit_enforce('r', 'api_memory');
SELECT rate_limit_enforce('r', 'api_unlogged');
ROLLBACK;
SELECT remaining AS memory_left FROM rate_limit_check('r', 'api_memory');
SELECT remaining AS unlogged_left FROM rate_limit_check('r', 'api_unlogged');

-- Bad input is refused as by rate_limit_request (bad_input_table covers every argument).
SELECT rate_limit_enforce('k', 'no_such_limit');
SELECT rate_limit_enforce('k', 'one', 2);
SELECT rate_limit_enforce(NULL, 'one');

SELECT rate_limit_drop(name) FROM rate_limit_config WHERE name <> 'default' ORDER BY name;
RESET pg_ratelimit.fake_now;
