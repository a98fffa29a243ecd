-- rate_limit_request_all: several (key, limit, cost) triples, consumed all or none, on every storage mode,
-- with shards and per-key overrides. (The server runs with shared_preload_libraries = 'pg_ratelimit',
-- which memory limits need.)
SET timezone = 'UTC';
SET intervalstyle = 'postgres';
SET pg_ratelimit.fake_now = '2026-01-01 00:00:00+00';
SELECT rate_limit_define('sec_' || s, 2, '1 second', storage => s),
       rate_limit_define('day_' || s, 5, '1 day', algorithm => 'fixed_window', storage => s),
       rate_limit_define('shr_' || s, 8, '1 hour', shards => 4, storage => s),
       rate_limit_override('vip', 'day_' || s, 50)
  FROM unnest(ARRAY['durable', 'unlogged', 'memory']) AS s;

-- Everything a call could have consumed, as rate_limit_check sees it (what a request of 1 would leave, for
-- every key and limit of the tests): equal before and after a call means the call consumed nothing.
CREATE FUNCTION pg_temp.state_of(s text) RETURNS text LANGUAGE sql AS $$
    SELECT string_agg(format('%s/%s=%s', l, k, (rate_limit_check(k, l || s)).remaining), ' ' ORDER BY l, k)
      FROM unnest(ARRAY['sec_', 'day_', 'shr_']) AS l, unnest(ARRAY['u', 'vip', 'global']) AS k
$$;

-- The call's decision first (position 0), then each triple's in the order given.
SELECT * FROM rate_limit_request_all(ARRAY['u', 'u'], ARRAY['sec_durable', 'day_durable']);
-- costs: NULL or a NULL element means 1.
SELECT position, allowed, remaining
  FROM rate_limit_request_all(ARRAY['u', 'u'], ARRAY['sec_durable', 'day_durable'], ARRAY[NULL, 2]);
SELECT pg_temp.state_of('durable');

-- A denial anywhere consumes nothing anywhere: sec_ has no unit left for u. The other rows say what they
-- would have decided (allowed, remaining after the units they would have taken).
SELECT * FROM rate_limit_request_all(ARRAY['u', 'u'], ARRAY['day_durable', 'sec_durable']);
SELECT pg_temp.state_of('durable');
-- Whatever the position of the denied triple and the order of the names.
SELECT position, key, limit_name, allowed, remaining
  FROM rate_limit_request_all(ARRAY['global', 'u', 'vip'], ARRAY['day_durable', 'sec_durable', 'day_durable']);
SELECT pg_temp.state_of('durable');
-- The largest retry_after (here sec_'s) and reset_after, the smallest remaining.
SELECT r.position, r.allowed, r.remaining, r.retry_after, r.reset_after
  FROM rate_limit_request_all(ARRAY['u', 'u', 'vip'], ARRAY['day_durable', 'sec_durable', 'day_durable'],
                              ARRAY[1, 1, 10]) AS r;

-- Every storage mode, with shards and overrides: a call that one triple denies leaves every triple's
-- state as it was (memory entries are given back: they do not roll back with the transaction).
SET pg_ratelimit.fake_now = '2026-01-02 00:00:00+00';
SELECT count(*) AS u_took_one FROM unnest(ARRAY['durable', 'unlogged', 'memory']) AS s,
       LATERAL rate_limit_request('u', 'sec_' || s) AS r WHERE r.allowed;
CREATE TEMP TABLE before_denial AS SELECT s, pg_temp.state_of(s) AS state
  FROM unnest(ARRAY['durable', 'unlogged', 'memory']) AS s;
-- Allowed: shr_ (a shard of 2), day_ for vip (override: 50), sec_ for global; then sec_ for u, twice in
-- the same call (decided in turn: after the unit taken above, the second of a capacity of 2 is denied).
SELECT s, r.position, r.key, r.limit_name, r.allowed
  FROM unnest(ARRAY['durable', 'unlogged', 'memory']) AS s,
       rate_limit_request_all(ARRAY['global', 'vip', 'global', 'u', 'u'],
                              ARRAY['shr_' || s, 'day_' || s, 'sec_' || s, 'sec_' || s, 'sec_' || s],
                              ARRAY[2, 30, 1, 1, 1]) AS r
 ORDER BY s, r.position;
SELECT b.s, pg_temp.state_of(b.s) = b.state AS nothing_consumed FROM before_denial b ORDER BY b.s;
-- The same call without the last triple is allowed and consumes from every limit.
SELECT s, r.allowed, r.remaining
  FROM unnest(ARRAY['durable', 'unlogged', 'memory']) AS s,
       rate_limit_request_all(ARRAY['global', 'vip', 'global', 'u'],
                              ARRAY['shr_' || s, 'day_' || s, 'sec_' || s, 'sec_' || s], ARRAY[2, 30, 1, 1]) AS r
 WHERE r.position = 0 ORDER BY s;
SELECT b.s, pg_temp.state_of(b.s) = b.state AS unchanged, pg_temp.state_of(b.s) AS state
  FROM before_denial b ORDER BY b.s;
-- A memory triple denied after another memory triple took (day_ is decided before sec_): the first is
-- refunded.
SET pg_ratelimit.fake_now = '2026-01-03 00:00:00+00';
SELECT position, allowed, remaining
  FROM rate_limit_request_all(ARRAY['m', 'm'], ARRAY['sec_memory', 'day_memory'], ARRAY[2, 1]);
SELECT position, allowed, remaining
  FROM rate_limit_request_all(ARRAY['m', 'm'], ARRAY['sec_memory', 'day_memory'], ARRAY[1, 1]);
SELECT (rate_limit_check('m', 'day_memory')).remaining AS day_left_after_one_more,
       (rate_limit_check('m', 'sec_memory')).allowed AS sec_allows_one_more;
-- Durable and memory together: the memory triples are decided last, so a table denial takes nothing
-- from memory, and a memory denial rolls the table triples back.
SELECT position, allowed FROM rate_limit_request_all(ARRAY['m2', 'm'], ARRAY['sec_memory', 'day_durable'],
                                                     ARRAY[1, 5]);
SELECT position, allowed FROM rate_limit_request_all(ARRAY['m2', 'm'], ARRAY['sec_memory', 'day_durable'],
                                                     ARRAY[1, 1]);
SELECT position, allowed FROM rate_limit_request_all(ARRAY['m3', 'm'], ARRAY['day_durable', 'sec_memory'],
                                                     ARRAY[2, 1]);
SELECT (rate_limit_check('m2', 'sec_memory')).remaining AS m2_sec_memory_left_after_one_more,
       (rate_limit_check('m', 'day_durable')).allowed AS m_day_durable_allows_one_more,
       (rate_limit_check('m3', 'day_durable')).remaining AS m3_day_durable_left_after_one_more;
-- A denial by the first table triple writes nothing at all: fine in a read-only transaction.
BEGIN READ ONLY;
SELECT position, allowed FROM rate_limit_request_all(ARRAY['m', 'm', 'm'],
                                                     ARRAY['sec_memory', 'sec_durable', 'day_durable']);
COMMIT;

-- Inside a transaction: table triples roll back with it, memory triples do not (as rate_limit_request).
BEGIN;
SELECT allowed FROM rate_limit_request_all(ARRAY['t', 't'], ARRAY['sec_durable', 'sec_memory']) WHERE position = 0;
ROLLBACK;
SELECT (rate_limit_check('t', 'sec_durable')).remaining AS durable_after_rollback,
       (rate_limit_check('t', 'sec_memory')).remaining AS memory_after_rollback;
-- Savepoints of the caller and the call's own subtransaction nest: a denied call inside a savepoint, the
-- savepoint released, an allowed call, then a rollback to an earlier savepoint undoes the allowed call only.
BEGIN;
SELECT allowed FROM rate_limit_request_all(ARRAY['t', 't'], ARRAY['sec_durable', 'day_durable']) WHERE position = 0;
SAVEPOINT a;
SELECT allowed FROM rate_limit_request_all(ARRAY['t', 't'], ARRAY['sec_durable', 'day_durable'], ARRAY[2, 1])
 WHERE position = 0;
RELEASE a;
SAVEPOINT b;
SELECT allowed FROM rate_limit_request_all(ARRAY['t', 't'], ARRAY['sec_durable', 'day_durable']) WHERE position = 0;
ROLLBACK TO b;
COMMIT;
SELECT (rate_limit_check('t', 'sec_durable')).remaining AS sec_left, (rate_limit_check('t', 'day_durable')).remaining AS day_left;
-- In a PL/pgSQL block with an EXCEPTION clause, as a statement of it and as the failing statement: an error
-- inside the call's subtransaction (here a write in a read-only transaction) unwinds through it, and the
-- block's handler still finds its own subtransaction.
CREATE FUNCTION pg_temp.guarded(keys text[], limits text[]) RETURNS text LANGUAGE plpgsql AS $$
BEGIN
    RETURN (SELECT allowed::text FROM rate_limit_request_all(keys, limits) WHERE position = 0);
EXCEPTION WHEN read_only_sql_transaction THEN
    RETURN 'caught ' || SQLSTATE;
END
$$;
BEGIN READ ONLY;
SELECT pg_temp.guarded(ARRAY['ro', 'ro'], ARRAY['sec_memory', 'sec_durable']);
SELECT pg_temp.guarded(ARRAY['ro', 'ro'], ARRAY['sec_memory', 'day_memory']);
COMMIT;
SELECT (rate_limit_check('ro', 'sec_memory')).remaining AS ro_memory_left,
       (rate_limit_check('ro', 'sec_durable')).remaining AS ro_durable_left;

-- One triple is rate_limit_request.
SET pg_ratelimit.fake_now = '2026-01-04 00:00:00+00';
SELECT position, allowed, remaining FROM rate_limit_request_all(ARRAY['one'], ARRAY['sec_durable']);
SELECT allowed, remaining FROM rate_limit_request('one', 'sec_durable');
SELECT position, allowed, remaining, retry_after FROM rate_limit_request_all(ARRAY['one'], ARRAY['sec_durable']);

-- Bad input fails the call before anything is decided, even for memory limits: every key, limit and cost
-- is checked first (a cost is checked against the key's own limit: vip's override allows 50 a day).
CREATE TEMP TABLE before_errors AS SELECT pg_temp.state_of('memory') AS state;
SELECT * FROM rate_limit_request_all(ARRAY['u', 'u'], ARRAY['sec_memory']);
SELECT * FROM rate_limit_request_all(ARRAY['u'], ARRAY['sec_memory'], ARRAY[1, 1]);
SELECT * FROM rate_limit_request_all(ARRAY[]::text[], ARRAY[]::text[]);
SELECT * FROM rate_limit_request_all(NULL, ARRAY['sec_memory']);
SELECT * FROM rate_limit_request_all(ARRAY['u'], NULL);
SELECT * FROM rate_limit_request_all(ARRAY['u', NULL], ARRAY['sec_memory', 'day_memory']);
SELECT * FROM rate_limit_request_all(ARRAY['u', 'u'], ARRAY['sec_memory', NULL]);
SELECT * FROM rate_limit_request_all(ARRAY['u', 'u'], ARRAY['sec_memory', 'no_such_limit']);
SELECT * FROM rate_limit_request_all(ARRAY['u', repeat('x', 1025)], ARRAY['sec_memory', 'day_memory']);
SELECT * FROM rate_limit_request_all(ARRAY['u', 'u'], ARRAY['sec_memory', 'day_memory'], ARRAY[1, 'NaN'::float8]);
SELECT * FROM rate_limit_request_all(ARRAY['u', 'u'], ARRAY['sec_memory', 'day_memory'], ARRAY[1, -1]);
SELECT * FROM rate_limit_request_all(ARRAY['vip', 'u'], ARRAY['day_memory', 'day_memory'], ARRAY[50, 6]);
SELECT * FROM rate_limit_request_all(ARRAY['u', 'u'], ARRAY['sec_memory', 'shr_memory'], ARRAY[1, 3]);
SELECT * FROM rate_limit_request_all(ARRAY[['u', 'u'], ['u', 'u']], ARRAY[['sec_memory', 'day_memory'], ['sec_memory', 'day_memory']]);
-- One (key, limit) named twice for more than its capacity in all (2): it could never be allowed.
SELECT * FROM rate_limit_request_all(ARRAY['u', 'x', 'u'], ARRAY['sec_memory', 'day_memory', 'sec_memory'], ARRAY[1, 1, 1.5]);
-- At most 1,000,000 triples in one call.
SELECT count(*) FROM rate_limit_request_all(array_fill('u'::text, ARRAY[1000001]), array_fill('sec_memory'::text, ARRAY[1000001]));
SELECT pg_temp.state_of('memory') = state AS nothing_consumed FROM before_errors;
-- The overridden cost that fits (vip: 50) is allowed.
SELECT position, allowed, remaining
  FROM rate_limit_request_all(ARRAY['vip', 'u'], ARRAY['day_memory', 'sec_memory'], ARRAY[50, 1]);

-- A limit dropped or redefined in the caller's transaction is seen by the next call.
BEGIN;
SELECT rate_limit_drop('sec_unlogged');
SELECT * FROM rate_limit_request_all(ARRAY['u', 'u'], ARRAY['day_unlogged', 'sec_unlogged']);
ROLLBACK;
BEGIN;
SELECT rate_limit_define('sec_unlogged', 100, '1 second', storage => 'unlogged');
SELECT position, allowed, remaining
  FROM rate_limit_request_all(ARRAY['u', 'u'], ARRAY['day_unlogged', 'sec_unlogged'], ARRAY[1, 50]);
ROLLBACK;

-- Shadow limits never make the call deny: a shadow limit's would-be denial is flagged (shadow_denied, on its
-- row and on the call's, with no retry_after) and the other limits are consumed. A shadow triple takes
-- nothing, so a later real denial refunds nothing for it (a refund would mint units).
SET pg_ratelimit.fake_now = '2026-01-05 00:00:00+00';
SELECT rate_limit_define('shadow_' || s, 1, '1 hour', storage => s, shadow => true),
       rate_limit_define('tiny_' || s, 1, '1 hour', storage => s)
  FROM unnest(ARRAY['durable', 'memory']) AS s;
SELECT position, allowed, remaining, retry_after, shadow_denied
  FROM rate_limit_request_all(ARRAY['s', 's', 's'], ARRAY['shadow_durable', 'shadow_memory', 'sec_durable']);
SELECT position, allowed, remaining, retry_after, shadow_denied
  FROM rate_limit_request_all(ARRAY['s', 's', 's'], ARRAY['shadow_durable', 'shadow_memory', 'sec_durable']);
SELECT (rate_limit_check('s', 'sec_durable')).allowed AS sec_allows_one_more;
SELECT allowed FROM rate_limit_request('s', 'tiny_memory');
SELECT position, allowed, shadow_denied
  FROM rate_limit_request_all(ARRAY['s', 's'], ARRAY['tiny_memory', 'shadow_memory']);
SELECT (rate_limit_check('s', 'shadow_memory')).shadow_denied AS shadow_memory_still_exhausted;
SELECT rate_limit_drop(l || s) FROM unnest(ARRAY['shadow_', 'tiny_']) AS l, unnest(ARRAY['durable', 'memory']) AS s;

-- Statistics (rate_limit_stats) count decisions as they are made, not transactionally: the triples of a
-- denied call decided before its denial count as allowed (their units consumed, and a memory triple's
-- refund as refunded), as a request in a transaction that rolls back does; those after it as checks.
SET pg_ratelimit.fake_now = '2026-01-06 00:00:00+00';
SELECT rate_limit_stats_reset(l || s)
  FROM unnest(ARRAY['sec_', 'day_']) AS l, unnest(ARRAY['durable', 'memory']) AS s;
SELECT position, allowed FROM rate_limit_request_all(ARRAY['st', 'st', 'st', 'st'],
    ARRAY['day_durable', 'sec_durable', 'day_memory', 'sec_memory'], ARRAY[1, 1, 1, 2]);
SELECT position, allowed FROM rate_limit_request_all(ARRAY['st', 'st', 'st', 'st'],
    ARRAY['day_durable', 'sec_durable', 'day_memory', 'sec_memory'], ARRAY[1, 1, 1, 1]);
SELECT position, allowed FROM rate_limit_request_all(ARRAY['st', 'st'], ARRAY['sec_memory', 'day_durable'], ARRAY[1, 5]);
SELECT limit_name, requests, allowed, denied, checks, units_consumed, units_refunded
  FROM rate_limit_stats WHERE limit_name ~ '^(sec|day)_(durable|memory)$' ORDER BY limit_name;

SELECT rate_limit_drop(l || s)
  FROM unnest(ARRAY['sec_', 'day_', 'shr_']) AS l, unnest(ARRAY['durable', 'unlogged', 'memory']) AS s;
RESET pg_ratelimit.fake_now;
