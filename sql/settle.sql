-- rate_limit_settle: a reservation trued up to the actual cost in one call. Less gives the difference back
-- (never above capacity), more takes it whatever the balance (into debt beyond max_reserved: the work is
-- done), equal writes nothing. Transactional (except memory limits); every algorithm, storage and shards.
SET timezone = 'UTC';
SET intervalstyle = 'postgres';
SET pg_ratelimit.fake_now = '2026-01-01 00:00:00+00';
-- 100 tokens per minute, capacity 100, reservations up to 50 in debt.
SELECT rate_limit_define('llm', 100, '1 minute', max_reserved => 50);

-- Reserved 40, used 25: 15 come back.
SELECT allowed, remaining FROM rate_limit_request('team', 'llm', 40);
SELECT * FROM rate_limit_settle('team', 'llm', 40, 25);
-- Reserved 40, used 90: 50 more are taken, although only 35 are left: the key goes 15 into debt.
SELECT allowed, remaining FROM rate_limit_request('team', 'llm', 40);
SELECT * FROM rate_limit_settle('team', 'llm', 40, 90);
SELECT allowed, remaining, retry_after FROM rate_limit_check('team', 'llm');
-- Beyond max_reserved too: reserved 1, used 100 puts the key 114 in debt (a reservation could go to 50 only).
SELECT * FROM rate_limit_settle('team', 'llm', 1, 100);
SELECT allowed, retry_after FROM rate_limit_request('team', 'llm', 1, reserve => true);
-- Equal: the key's state, nothing written.
SELECT value, ts FROM rate_limit_state WHERE limit_name = 'llm' AND key = 'team' \gset before_
SELECT * FROM rate_limit_settle('team', 'llm', 7, 7);
SELECT value = :before_value AND ts = :'before_ts' AS unchanged FROM rate_limit_state WHERE limit_name = 'llm' AND key = 'team';
-- Giving back never goes above capacity: a full key stays full (and without a row).
SELECT * FROM rate_limit_settle('fresh', 'llm', 100, 0);
SELECT count(*) AS fresh_rows FROM rate_limit_state WHERE key = 'fresh';
-- Actual 0: the whole reservation comes back. Actual above capacity is allowed (the work cost that much).
SELECT remaining FROM rate_limit_request('zero', 'llm', 60);
SELECT allowed, remaining FROM rate_limit_settle('zero', 'llm', 60, 0);
SELECT allowed, remaining, retry_after FROM rate_limit_settle('zero', 'llm', 60, 1000);
-- Debt is bounded by 10^12 units, like every debt.
SELECT allowed, remaining, retry_after FROM rate_limit_settle('huge', 'llm', 1, 1e12);
SELECT allowed, remaining, retry_after FROM rate_limit_settle('huge', 'llm', 1, 1e12);
SELECT value FROM rate_limit_state WHERE limit_name = 'llm' AND key = 'huge';

-- Transactional: a rolled-back settle leaves the key as it was.
SELECT remaining FROM rate_limit_request('tx', 'llm', 50);
BEGIN;
SELECT remaining FROM rate_limit_settle('tx', 'llm', 50, 80);
ROLLBACK;
SELECT remaining FROM rate_limit_check('tx', 'llm');

-- Every algorithm: a fixed window and GCRA go into debt like the token bucket; a sliding window has no debt
-- (it cannot store one): the extra is taken down to 0 at most.
SELECT rate_limit_define('fw', 10, '1 hour', algorithm => 'fixed_window', start => '2026-01-01+00');
SELECT rate_limit_define('gc', 10, '1 hour', algorithm => 'gcra');
SELECT rate_limit_define('sw', 10, '1 hour', algorithm => 'sliding_window', start => '2026-01-01+00');
SELECT l AS "limit", (rate_limit_request('a', l, 4)).remaining AS after_reserve_4 FROM unnest(ARRAY['fw', 'gc', 'sw']) AS l;
SELECT l AS "limit", (rate_limit_settle('a', l, 4, 2)).remaining AS after_settle_2 FROM unnest(ARRAY['fw', 'gc', 'sw']) AS l;
SELECT l AS "limit", d.* FROM unnest(ARRAY['fw', 'gc', 'sw']) AS l, LATERAL rate_limit_settle('a', l, 2, 20) AS d;

-- Every storage mode and a sharded limit decide alike (memory: a rollback keeps what was settled).
SELECT rate_limit_define('tb_' || s, 10, '1 minute', storage => s),
       rate_limit_define('sh_' || s, 8, '1 minute', shards => 4, storage => s)
  FROM unnest(ARRAY['durable', 'unlogged', 'memory']) AS s;
CREATE FUNCTION pg_temp.settle_script(s text) RETURNS TABLE (call text, d rate_limit_decision) LANGUAGE plpgsql AS $$
BEGIN
    call := 'tb reserve 6'; d := rate_limit_request('k', 'tb_' || s, 6); RETURN NEXT;
    call := 'tb settle 6 -> 2'; d := rate_limit_settle('k', 'tb_' || s, 6, 2); RETURN NEXT;
    call := 'tb settle 5 -> 15'; d := rate_limit_settle('k', 'tb_' || s, 5, 15); RETURN NEXT;
    call := 'tb check'; d := rate_limit_check('k', 'tb_' || s); RETURN NEXT;
    call := 'sh reserve 2'; d := rate_limit_request('k', 'sh_' || s, 2); RETURN NEXT;
    call := 'sh settle 2 -> 7'; d := rate_limit_settle('k', 'sh_' || s, 2, 7); RETURN NEXT;
    call := 'sh settle 2 -> 0'; d := rate_limit_settle('k', 'sh_' || s, 2, 0); RETURN NEXT;
END
$$;
SELECT s AS storage, n, call, (d).* FROM unnest(ARRAY['durable', 'unlogged', 'memory']) AS s,
       pg_temp.settle_script(s) WITH ORDINALITY AS r (call, d, n)
 ORDER BY n, array_position(ARRAY['durable', 'unlogged', 'memory'], s);
BEGIN;
SELECT remaining FROM rate_limit_settle('r', 'tb_memory', 1, 5);
SELECT remaining FROM rate_limit_settle('r', 'tb_unlogged', 1, 5);
ROLLBACK;
SELECT remaining AS memory_left FROM rate_limit_check('r', 'tb_memory');
SELECT remaining AS unlogged_left FROM rate_limit_check('r', 'tb_unlogged');

-- Bad input (bad_input_table covers every argument): reserved above the capacity, of a shard too.
SELECT rate_limit_settle('k', 'tb_durable', 11, 1);
SELECT rate_limit_settle('k', 'sh_durable', 3, 1);
SELECT rate_limit_settle('k', 'tb_durable', 'NaN', 1);
SELECT rate_limit_settle('k', 'tb_durable', 1, -1);
SELECT rate_limit_settle('k', 'tb_durable', 1, 'Infinity');
SELECT rate_limit_settle('k', 'no_such_limit', 1, 1);

SELECT rate_limit_drop(name) FROM rate_limit_config WHERE name <> 'default' ORDER BY name;
RESET pg_ratelimit.fake_now;
