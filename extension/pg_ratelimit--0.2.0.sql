-- pg_ratelimit 0.2.0: the full install script (a database at 0.1.0 is brought here by
-- pg_ratelimit--0.1.0--0.2.0.sql: ALTER EXTENSION pg_ratelimit UPDATE).
\echo Use "CREATE EXTENSION pg_ratelimit" to load this file. \quit

-- What every call returns.
CREATE TYPE @extschema@.rate_limit_decision AS (
    allowed     boolean,   -- the units were granted (possibly as a reservation)
    remaining   bigint,    -- whole units left after the call, 0 while in debt
    retry_after interval,  -- 0 when allowed now; denied: until the same request can succeed;
                           -- reserved: until the reserved work may run
    reset_after interval,  -- until the key is back at full capacity
    shadow_denied boolean  -- a shadow limit would have denied this call (allowed is true: README, Shadow mode)
);

-- Named limits. Read it freely; change it with rate_limit_define() / rate_limit_drop().
CREATE TABLE @extschema@.rate_limit_config (
    name         text COLLATE "C" PRIMARY KEY CHECK (name <> '' AND octet_length(name) <= 128),
    algorithm    text NOT NULL CHECK (algorithm IN ('token_bucket', 'gcra', 'fixed_window', 'sliding_window',
                                                    'concurrency')),
    rate         float8 NOT NULL CHECK (rate >= 1e-9 AND rate <= 1e12),
    period       interval NOT NULL CHECK (period > interval '0'),
    capacity     float8 NOT NULL CHECK (capacity >= 1e-9 AND capacity <= 1e12),
    max_reserved float8 CHECK (max_reserved >= 0 AND (max_reserved <= 1e12 OR max_reserved = 'Infinity')),
                                                                               -- NULL: unlimited
    start        timestamptz CHECK (start IS NULL OR (algorithm IN ('fixed_window', 'sliding_window')
                                                      AND isfinite(start))),
    shards       integer NOT NULL DEFAULT 1 CHECK (shards BETWEEN 1 AND 256),  -- rows per key (hot-key shards)
    storage      text NOT NULL DEFAULT 'durable' CHECK (storage IN ('durable', 'unlogged', 'memory')),
                                                   -- where the keys' state lives (README: storage modes)
    epoch        bigint NOT NULL DEFAULT 0,        -- rate_limit_define draws a new one whenever the keys
                                                   -- start afresh (memory state of another epoch is void)
    jitter       interval NOT NULL DEFAULT '0' CHECK (jitter >= interval '0' AND jitter <= interval '1 day'
                                                      AND date_part('month', jitter) = 0
                                                      AND date_part('year', jitter) = 0),
                                                   -- denied calls' retry_after spread by up to this much
    time_zone    text CHECK (time_zone <> ''),     -- fixed windows: calendar days, weeks or months there
    shadow       boolean NOT NULL DEFAULT false,   -- never denies: decisions that would deny are allowed and
                                                   -- flagged shadow_denied (roll a new limit out safely)
    -- Months (calendar windows, in UTC without a time_zone) and time zones are for fixed windows only.
    CONSTRAINT rate_limit_config_calendar_check
        CHECK (algorithm = 'fixed_window'
               OR (time_zone IS NULL AND date_part('month', period) = 0 AND date_part('year', period) = 0)),
    -- A sliding window's capacity is its rate, it takes no reservations, and it needs 1 ms windows or longer.
    CHECK (algorithm <> 'sliding_window'
           OR (capacity = rate AND max_reserved IS NOT NULL AND max_reserved = 0
               AND period >= interval '1 millisecond')),
    -- A concurrency limit's rate is its number of slots (leases held at once): a whole number up to 10,000;
    -- nothing else of a rate applies.
    CONSTRAINT rate_limit_config_concurrency_check
        CHECK (algorithm <> 'concurrency'
               OR (rate = pg_catalog.trunc(rate) AND rate <= 10000 AND capacity = rate AND max_reserved IS NOT NULL
                   AND max_reserved = 0 AND shards = 1 AND storage = 'durable'))
);
COMMENT ON TABLE @extschema@.rate_limit_config IS
    'pg_ratelimit: named limits; change them with rate_limit_define() and rate_limit_drop()';

-- Two numbers per (limit, key, shard), created on first use. A key without a row is at full capacity. A
-- limit defined with shards => N splits each key's allowance over the rows of shards 0 to N-1; otherwise
-- a key has the one row of shard 0.
-- "C" collation: keys are compared byte-wise, the cheapest comparison.
--
-- PostgreSQL: every admitted request rewrites its row, and fillfactor 50 leaves room on each page for those
-- (HOT) updates between two prunes of the page. Requests find their row through the hash index on
-- limit_name || key (one hash, one bucket page; the function checks limit_name and key on the row), not
-- through the primary key, whose btree descent reads three pages with two text comparisons at each step
-- (measured: 16% fewer instructions per call). The primary key keeps (limit_name, key) unique.
--
-- YugabyteDB (its version() reads "...-YB-..."): rows live in DocDB, where storage parameters such as
-- fillfactor are ignored and a hash index would become an LSM one. There the table is sharded by a hash of
-- the whole (limit_name, key), so that the keys of one limit spread over all tablets (PRIMARY KEY
-- (limit_name, key, ...) would hash limit_name alone and put every key of a limit on one tablet), and requests
-- use the SQL access path, which reads by primary key: no lookup index. The shards of a key share its hash,
-- so one read finds them all.
--
-- rate_limit_state_unlogged has the same shape, for the limits defined with storage => 'unlogged': an
-- UNLOGGED table writes no WAL (synchronous_commit = on then waits for no flush on its account), is
-- emptied by crash recovery and is not replicated. YugabyteDB has no unlogged tables (DocDB replicates
-- every write): there it is an ordinary table, and 'unlogged' behaves as 'durable'.
DO $$
DECLARE
    yugabytedb constant boolean := pg_catalog.strpos(pg_catalog.version(), '-YB-') > 0;
    columns constant text := 'limit_name text COLLATE "C" NOT NULL, key text COLLATE "C" NOT NULL,'
                             ' shard smallint NOT NULL DEFAULT 0, value float8 NOT NULL, ts timestamptz NOT NULL, ';
BEGIN
    IF NOT yugabytedb THEN
        EXECUTE 'CREATE TABLE @extschema@.rate_limit_state (' || columns
             || 'PRIMARY KEY (limit_name, key, shard)) WITH (fillfactor = 50)';
        EXECUTE 'CREATE UNLOGGED TABLE @extschema@.rate_limit_state_unlogged (' || columns
             || 'PRIMARY KEY (limit_name, key, shard)) WITH (fillfactor = 50)';
        CREATE INDEX rate_limit_state_lookup ON @extschema@.rate_limit_state USING hash ((limit_name || key));
        CREATE INDEX rate_limit_state_unlogged_lookup ON @extschema@.rate_limit_state_unlogged
            USING hash ((limit_name || key));
    ELSE
        EXECUTE 'CREATE TABLE @extschema@.rate_limit_state (' || columns
             || 'PRIMARY KEY ((limit_name, key) HASH, shard ASC))';
        EXECUTE 'CREATE TABLE @extschema@.rate_limit_state_unlogged (' || columns
             || 'PRIMARY KEY ((limit_name, key) HASH, shard ASC))';
    END IF;
END
$$;
COMMENT ON TABLE @extschema@.rate_limit_state IS
    'pg_ratelimit: per-key state (units available and when they were computed); a missing row means full';
COMMENT ON TABLE @extschema@.rate_limit_state_unlogged IS
    'pg_ratelimit: per-key state of the limits with unlogged storage; a missing row means full';

-- Each backend caches limits; any change to rate_limit_config (by the functions below or by direct
-- DML) invalidates those caches.
CREATE FUNCTION @extschema@.rate_limit_config_changed() RETURNS trigger
    AS 'MODULE_PATHNAME', 'rate_limit_config_changed' LANGUAGE C;
CREATE TRIGGER rate_limit_config_changed
    AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON @extschema@.rate_limit_config
    FOR EACH STATEMENT EXECUTE FUNCTION @extschema@.rate_limit_config_changed();
-- Also under session_replication_role = replica (a logical replication subscriber applying changes).
ALTER TABLE @extschema@.rate_limit_config ENABLE ALWAYS TRIGGER rate_limit_config_changed;

-- Every changed row takes its limit's lock, so that rate_limit_cleanup never works with a definition
-- that changes under it; and an INSERT of 'default' over the untouched shipped row replaces it: pg_restore
-- first runs CREATE EXTENSION, which inserts the shipped 'default' row, then copies the dumped rows,
-- which include 'default' again (possibly redefined). In C, so that no schema name is written into it.
CREATE FUNCTION @extschema@.rate_limit_config_row() RETURNS trigger
    AS 'MODULE_PATHNAME', 'rate_limit_config_row' LANGUAGE C;
CREATE TRIGGER rate_limit_config_row
    BEFORE INSERT OR UPDATE OR DELETE ON @extschema@.rate_limit_config
    FOR EACH ROW EXECUTE FUNCTION @extschema@.rate_limit_config_row();
ALTER TABLE @extschema@.rate_limit_config ENABLE ALWAYS TRIGGER rate_limit_config_row;

-- ALTER EXTENSION ... ADD / DROP changes which tables are the extension's, without invalidating anything
-- that sessions cached about them: this event trigger makes them check again. (Event triggers need a
-- superuser, as does installing the extension. YugabyteDB documents event triggers for sql_drop only:
-- there the trigger is left out, and a membership change reaches sessions as they reconnect.)
CREATE FUNCTION @extschema@.rate_limit_extension_changed() RETURNS event_trigger
    AS 'MODULE_PATHNAME', 'rate_limit_extension_changed' LANGUAGE C;
DO $$
BEGIN
    IF pg_catalog.strpos(pg_catalog.version(), '-YB-') = 0 THEN
        CREATE EVENT TRIGGER rate_limit_extension_changed ON ddl_command_end WHEN TAG IN ('ALTER EXTENSION')
            EXECUTE FUNCTION @extschema@.rate_limit_extension_changed();
    END IF;
END
$$;

-- Limits and key state are user data: pg_dump keeps them.
SELECT pg_catalog.pg_extension_config_dump('@extschema@.rate_limit_config', '');
SELECT pg_catalog.pg_extension_config_dump('@extschema@.rate_limit_state', '');
SELECT pg_catalog.pg_extension_config_dump('@extschema@.rate_limit_state_unlogged', '');

-- The shipped limit: two per second with one minute of burst.
INSERT INTO @extschema@.rate_limit_config (name, algorithm, rate, period, capacity)
VALUES ('default', 'token_bucket', 120, interval '1 minute', 120);

-- The functions run as the extension's owner (SECURITY DEFINER) so that callers need no rights on the
-- tables; their SQL is schema-qualified and uses pg_catalog operators only.
CREATE FUNCTION @extschema@.rate_limit_define(
    name text, rate float8, period interval, algorithm text DEFAULT 'token_bucket',
    capacity float8 DEFAULT NULL, max_reserved float8 DEFAULT NULL, start timestamptz DEFAULT NULL,
    shards integer DEFAULT 1, storage text DEFAULT 'durable', jitter interval DEFAULT NULL,
    rescale text DEFAULT 'proportional', time_zone text DEFAULT NULL, shadow boolean DEFAULT false)
RETURNS void AS 'MODULE_PATHNAME', 'rate_limit_define' LANGUAGE C VOLATILE SECURITY DEFINER;
COMMENT ON FUNCTION @extschema@.rate_limit_define(text, float8, interval, text, float8, float8, timestamptz, integer, text, interval, text, text, boolean) IS
    'creates or updates a named limit; its keys keep the same share of their capacity (rescale => proportional, as_is or reset), and start afresh when the algorithm (except token_bucket <-> gcra), the number of shards or the storage changes';

CREATE FUNCTION @extschema@.rate_limit_drop(name text)
RETURNS void AS 'MODULE_PATHNAME', 'rate_limit_drop' LANGUAGE C VOLATILE SECURITY DEFINER;
COMMENT ON FUNCTION @extschema@.rate_limit_drop(text) IS 'removes a named limit and the state of its keys';

CREATE FUNCTION @extschema@.rate_limit_request(
    key text, limit_name text DEFAULT 'default', cost float8 DEFAULT 1, reserve boolean DEFAULT false)
RETURNS @extschema@.rate_limit_decision
AS 'MODULE_PATHNAME', 'rate_limit_request' LANGUAGE C VOLATILE SECURITY DEFINER;
COMMENT ON FUNCTION @extschema@.rate_limit_request(text, text, float8, boolean) IS
    'consumes cost units for key if available (or as a reservation when reserve is true) (ROLLBACK undoes it, except for a limit with memory storage)';

-- A reservation bounded in time: for callers that wait (throttle) instead of failing. Consumes nothing
-- unless the units are due within max_wait, so a waiter that gives up has nothing to give back.
CREATE FUNCTION @extschema@.rate_limit_reserve(
    key text, limit_name text DEFAULT 'default', cost float8 DEFAULT 1, max_wait interval DEFAULT NULL)
RETURNS @extschema@.rate_limit_decision
AS 'MODULE_PATHNAME', 'rate_limit_reserve' LANGUAGE C VOLATILE SECURITY DEFINER;
COMMENT ON FUNCTION @extschema@.rate_limit_reserve(text, text, float8, interval) IS
    'reserves cost units for key if they are due within max_wait (retry_after: when to act); otherwise denied, consuming nothing (ROLLBACK undoes it, except for a limit with memory storage)';

CREATE FUNCTION @extschema@.rate_limit_request_many(
    keys text[], limit_name text DEFAULT 'default', costs float8[] DEFAULT NULL)
RETURNS TABLE (key text, "position" integer, allowed boolean, remaining bigint, retry_after interval,
               reset_after interval, shadow_denied boolean)
AS 'MODULE_PATHNAME', 'rate_limit_request_many' LANGUAGE C VOLATILE SECURITY DEFINER ROWS 100;
COMMENT ON FUNCTION @extschema@.rate_limit_request_many(text[], text, float8[]) IS
    'rate_limit_request for each key in turn (costs[i] for keys[i], 1 where NULL): one row per key, in order (ROLLBACK undoes it, except for a limit with memory storage)';

-- redis-cell's CL.THROTTLE reply, for applications moving over: the limit is named here instead of given
-- inline (CL.THROTTLE k 15 30 60 is rate_limit_define('k', 30, '60 s', 'gcra', capacity => 16)).
CREATE FUNCTION @extschema@.rate_limit_throttle(
    key text, limit_name text DEFAULT 'default', cost float8 DEFAULT 1,
    OUT limited integer, OUT "limit" bigint, OUT remaining bigint, OUT retry_after bigint, OUT reset_after bigint)
AS 'MODULE_PATHNAME', 'rate_limit_throttle' LANGUAGE C VOLATILE SECURITY DEFINER;
COMMENT ON FUNCTION @extschema@.rate_limit_throttle(text, text, float8) IS
    'rate_limit_request with redis-cell''s CL.THROTTLE reply: limited (0/1), limit, remaining, retry_after (seconds, -1 when allowed), reset_after (seconds)';

CREATE FUNCTION @extschema@.rate_limit_check(key text, limit_name text DEFAULT 'default', cost float8 DEFAULT 1)
RETURNS @extschema@.rate_limit_decision
AS 'MODULE_PATHNAME', 'rate_limit_check' LANGUAGE C VOLATILE SECURITY DEFINER;
COMMENT ON FUNCTION @extschema@.rate_limit_check(text, text, float8) IS
    'the decision rate_limit_request would return now, without consuming or writing anything';

CREATE FUNCTION @extschema@.rate_limit_refund(key text, limit_name text DEFAULT 'default', cost float8 DEFAULT 1)
RETURNS @extschema@.rate_limit_decision
AS 'MODULE_PATHNAME', 'rate_limit_refund' LANGUAGE C VOLATILE SECURITY DEFINER;
COMMENT ON FUNCTION @extschema@.rate_limit_refund(text, text, float8) IS
    'gives cost units back to key, never above capacity (cancels a reservation) (ROLLBACK undoes it, except for a limit with memory storage)';

CREATE FUNCTION @extschema@.rate_limit_reset(key text, limit_name text DEFAULT 'default')
RETURNS void AS 'MODULE_PATHNAME', 'rate_limit_reset' LANGUAGE C VOLATILE SECURITY DEFINER;
COMMENT ON FUNCTION @extschema@.rate_limit_reset(text, text) IS 'key starts over at full capacity (ROLLBACK undoes it, except for a limit with memory storage)';

-- rate_limit_request for callers that want an error, not a row: returns nothing when the units were
-- consumed, and raises SQLSTATE RL001 when denied (DETAIL: a JSON object with limit, key and retry_after
-- in seconds), so the caller's transaction rolls back: usable from triggers as a CHECK on the rate.
CREATE FUNCTION @extschema@.rate_limit_enforce(key text, limit_name text DEFAULT 'default', cost float8 DEFAULT 1)
RETURNS void AS 'MODULE_PATHNAME', 'rate_limit_enforce' LANGUAGE C VOLATILE SECURITY DEFINER;
COMMENT ON FUNCTION @extschema@.rate_limit_enforce(text, text, float8) IS
    'consumes cost units for key, or raises SQLSTATE RL001 (DETAIL: {"limit","key","retry_after"} as JSON) when denied (ROLLBACK undoes it, except for a limit with memory storage)';

-- Reserve, then settle: trues a reservation of `reserved` units up to the work's `actual` cost. Less gives
-- the difference back (never above capacity); more takes it whatever the balance, into debt beyond
-- max_reserved if it must (the work is done). Always allowed.
CREATE FUNCTION @extschema@.rate_limit_settle(key text, limit_name text, reserved float8, actual float8)
RETURNS @extschema@.rate_limit_decision
AS 'MODULE_PATHNAME', 'rate_limit_settle' LANGUAGE C VOLATILE SECURITY DEFINER;
COMMENT ON FUNCTION @extschema@.rate_limit_settle(text, text, float8, float8) IS
    'trues a reservation of reserved units up to the actual cost: gives back the difference or takes the extra, into debt if it must (ROLLBACK undoes it, except for a limit with memory storage)';

-- Bounded cleanup (extension/cleanup_function.cpp): with max_rows, a call examines at most that many rows
-- and the next bounded call of the session continues after them; rows a transaction holds are skipped.
CREATE FUNCTION @extschema@.rate_limit_cleanup(limit_name text DEFAULT NULL, max_rows bigint DEFAULT NULL)
RETURNS bigint AS 'MODULE_PATHNAME', 'rate_limit_cleanup' LANGUAGE C VOLATILE SECURITY DEFINER;
COMMENT ON FUNCTION @extschema@.rate_limit_cleanup(text, bigint) IS
    'deletes the rows of keys back at full capacity (and, for all limits, rows of limits that no longer exist), skipping rows in use; with max_rows, examines at most that many rows and the next call continues after them';

-- How much each storage holds: entries (one per key and shard) and bytes. The memory row also shows its
-- capacity (pg_ratelimit.memory_keys, rounded up to the table's shape) and its evictions: entries dropped
-- because the table was full, those back at full capacity (nothing lost) and the others (keys that
-- started over: raise pg_ratelimit.memory_keys). Without shared_preload_libraries the memory row is zeros.
CREATE FUNCTION @extschema@.rate_limit_memory_usage(
    OUT entries bigint, OUT capacity bigint, OUT bytes bigint, OUT evicted_full bigint, OUT evicted_not_full bigint)
AS 'MODULE_PATHNAME', 'rate_limit_memory_usage' LANGUAGE C VOLATILE;
CREATE VIEW @extschema@.rate_limit_storage AS
    SELECT 'durable'::text AS storage, (SELECT pg_catalog.count(*) FROM ONLY @extschema@.rate_limit_state) AS entries,
           NULL::bigint AS capacity,
           pg_catalog.pg_total_relation_size('@extschema@.rate_limit_state'::regclass) AS bytes,
           NULL::bigint AS evicted_full, NULL::bigint AS evicted_not_full
    UNION ALL
    SELECT 'unlogged', (SELECT pg_catalog.count(*) FROM ONLY @extschema@.rate_limit_state_unlogged), NULL,
           pg_catalog.pg_total_relation_size('@extschema@.rate_limit_state_unlogged'::regclass), NULL, NULL
    UNION ALL
    SELECT 'memory', m.entries, m.capacity, m.bytes, m.evicted_full, m.evicted_not_full
      FROM @extschema@.rate_limit_memory_usage() AS m;
COMMENT ON VIEW @extschema@.rate_limit_storage IS
    'pg_ratelimit: entries and bytes held by each storage mode (memory: also capacity and evictions)';

-- ---------------------------------------------------------------------------------------------------------
-- Per-key tiers: an override gives one key other numbers (rate, capacity, max_reserved) for a named limit;
-- everything else stays the limit's. Change them with rate_limit_override() / rate_limit_override_drop().
-- capacity or max_reserved NULL: the limit's, scaled by the override's rate over the limit's rate.
-- Not readable by PUBLIC (overrides reveal customers' plans): rate_limit_policy() tells anyone the numbers
-- of the one key they name, as rate_limit_check tells its state.
-- No foreign key to rate_limit_config: its RI triggers would sit on rate_limit_config, which the extension
-- refuses to write while it has triggers not its own (they would run as the owner); rate_limit_drop deletes
-- a limit's overrides, and a limit defined anew drops those a deletion by hand left behind.
-- YugabyteDB: sharded by limit_name (a limit's overrides are read together, a key's by primary key).
DO $$
DECLARE
    columns constant text :=
        'limit_name text COLLATE "C" NOT NULL CHECK (limit_name <> '''' AND octet_length(limit_name) <= 128),'
        ' key text COLLATE "C" NOT NULL CHECK (octet_length(key) <= 1024),'
        ' rate float8 NOT NULL CHECK (rate >= 1e-9 AND rate <= 1e12),'
        ' capacity float8 CHECK (capacity >= 1e-9 AND capacity <= 1e12),'
        ' max_reserved float8 CHECK (max_reserved >= 0 AND (max_reserved <= 1e12 OR max_reserved = ''Infinity'')), ';
BEGIN
    IF pg_catalog.strpos(pg_catalog.version(), '-YB-') = 0 THEN
        EXECUTE 'CREATE TABLE @extschema@.rate_limit_override (' || columns || 'PRIMARY KEY (limit_name, key))';
    ELSE
        EXECUTE 'CREATE TABLE @extschema@.rate_limit_override (' || columns
             || 'PRIMARY KEY (limit_name HASH, key ASC))';
    END IF;
END
$$;
COMMENT ON TABLE @extschema@.rate_limit_override IS
    'pg_ratelimit: per-key tiers; change them with rate_limit_override() and rate_limit_override_drop()';

-- Each backend caches overrides; any change to the table (by the functions below or by direct DML)
-- invalidates those caches, also under session_replication_role = replica.
CREATE FUNCTION @extschema@.rate_limit_override_changed() RETURNS trigger
    AS 'MODULE_PATHNAME', 'rate_limit_override_changed' LANGUAGE C;
CREATE TRIGGER rate_limit_override_changed
    AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON @extschema@.rate_limit_override
    FOR EACH STATEMENT EXECUTE FUNCTION @extschema@.rate_limit_override_changed();
ALTER TABLE @extschema@.rate_limit_override ENABLE ALWAYS TRIGGER rate_limit_override_changed;
-- Logical replication's apply worker fires row triggers only: the same invalidation for each row it applies.
CREATE TRIGGER rate_limit_override_changed_row
    AFTER INSERT OR UPDATE OR DELETE ON @extschema@.rate_limit_override
    FOR EACH ROW EXECUTE FUNCTION @extschema@.rate_limit_override_changed();
ALTER TABLE @extschema@.rate_limit_override ENABLE ALWAYS TRIGGER rate_limit_override_changed_row;

SELECT pg_catalog.pg_extension_config_dump('@extschema@.rate_limit_override', '');

CREATE FUNCTION @extschema@.rate_limit_override(
    key text, limit_name text, rate float8, capacity float8 DEFAULT NULL, max_reserved float8 DEFAULT NULL,
    rescale text DEFAULT 'proportional')
RETURNS void AS 'MODULE_PATHNAME', 'rate_limit_override' LANGUAGE C VOLATILE SECURITY DEFINER;
COMMENT ON FUNCTION @extschema@.rate_limit_override(text, text, float8, float8, float8, text) IS
    'sets the rate, capacity and max_reserved of one key of a named limit (NULL: the limit''s, scaled by the rates); the key''s state is rescaled (proportional, as_is or reset)';

CREATE FUNCTION @extschema@.rate_limit_override_drop(key text, limit_name text)
RETURNS boolean AS 'MODULE_PATHNAME', 'rate_limit_override_drop' LANGUAGE C VOLATILE SECURITY DEFINER;
COMMENT ON FUNCTION @extschema@.rate_limit_override_drop(text, text) IS
    'removes the override of one key (false if there was none); the key''s state is rescaled proportionally';

CREATE FUNCTION @extschema@.rate_limit_policy(
    key text, limit_name text DEFAULT 'default',
    OUT algorithm text, OUT rate float8, OUT period interval, OUT capacity float8, OUT max_reserved float8,
    OUT overridden boolean, OUT limit_has_overrides boolean, OUT time_zone text)
AS 'MODULE_PATHNAME', 'rate_limit_policy' LANGUAGE C VOLATILE SECURITY DEFINER;
COMMENT ON FUNCTION @extschema@.rate_limit_policy(text, text) IS
    'the numbers key is decided under for the limit (its override, if it has one; max_reserved NULL: unlimited), whether the limit has any override, and a calendar''s zone (its period: the window in progress)';

-- ---------------------------------------------------------------------------------------------------------
-- Statistics (extension/stats.hpp): per-limit counters since the last reset, kept in shared memory, so
-- they need shared_preload_libraries = 'pg_ratelimit' (without it, reading them or resetting raises 55000;
-- every other function works and nothing is counted). Not transactional, like pg_stat_*: a decision counts
-- when it is made, even if its transaction rolls back. requests = allowed + denied (one per key decided by
-- rate_limit_request, _request_many, _throttle, _enforce); shadow_denied: requests a shadow limit admitted
-- but would have denied (counted in allowed too); checks: rate_limit_check calls (not requests); units:
-- admitted without reserve (and rate_limit_settle's extra), admitted as reservations, asked back;
-- retries: lost races retried under READ COMMITTED. The row with a NULL limit_name counts the limits that
-- found no room (pg_ratelimit.stats_limits), in every database.
-- Readable by everyone, like rate_limit_config: totals per limit name, no key, no customer, nothing
-- rate_limit_check could not approach; REVOKE SELECT on the view and EXECUTE on rate_limit_stats_rows to
-- hide it. Resetting is the owner's (GRANT EXECUTE to delegate): it erases what monitoring relies on.
CREATE FUNCTION @extschema@.rate_limit_stats_rows(
    OUT limit_name text, OUT requests bigint, OUT allowed bigint, OUT denied bigint, OUT shadow_denied bigint,
    OUT checks bigint, OUT units_consumed float8, OUT units_reserved float8, OUT units_refunded float8,
    OUT retries bigint, OUT stats_reset timestamptz)
RETURNS SETOF record AS 'MODULE_PATHNAME', 'rate_limit_stats_rows' LANGUAGE C VOLATILE ROWS 100;
COMMENT ON FUNCTION @extschema@.rate_limit_stats_rows() IS
    'the rows of rate_limit_stats: this database''s limits, then the overflow row (limit_name NULL) if it counted anything';
CREATE VIEW @extschema@.rate_limit_stats AS SELECT * FROM @extschema@.rate_limit_stats_rows();
COMMENT ON VIEW @extschema@.rate_limit_stats IS
    'pg_ratelimit: per-limit counters since stats_reset (needs shared_preload_libraries; not transactional)';

-- Two functions, not a NULL default: NULL must never mean "every limit" (the view's overflow row has a
-- NULL name, and SELECT rate_limit_stats_reset(limit_name) FROM rate_limit_stats WHERE ... must not wipe
-- the rows it did not select).
CREATE FUNCTION @extschema@.rate_limit_stats_reset(limit_name text)
RETURNS void AS 'MODULE_PATHNAME', 'rate_limit_stats_reset' LANGUAGE C VOLATILE SECURITY DEFINER;
COMMENT ON FUNCTION @extschema@.rate_limit_stats_reset(text) IS
    'zeroes the statistics of one limit (NULL is an error)';
CREATE FUNCTION @extschema@.rate_limit_stats_reset()
RETURNS void AS 'MODULE_PATHNAME', 'rate_limit_stats_reset' LANGUAGE C VOLATILE SECURITY DEFINER;
COMMENT ON FUNCTION @extschema@.rate_limit_stats_reset() IS
    'removes every limit''s statistics row of this database and zeroes the overflow row (shared by every database)';

-- ---------------------------------------------------------------------------------------------------------
-- Concurrency limits (leases): a limit defined with algorithm => 'concurrency' bounds how many holders of a
-- key are in flight at once (its rate: the number of slots). A lease is a lock in PostgreSQL's lock manager
-- (extension/lease_slots.hpp): a transaction lease ends at COMMIT or ROLLBACK, a session lease at
-- rate_limit_release, at session end or once it has been held for the limit's period; both end when their
-- backend dies. pg_locks shows them as advisory locks with objsubid 21069 (transaction) or 21070 (session).
CREATE FUNCTION @extschema@.rate_limit_acquire(key text, limit_name text, scope text DEFAULT 'transaction')
RETURNS @extschema@.rate_limit_decision
AS 'MODULE_PATHNAME', 'rate_limit_acquire' LANGUAGE C VOLATILE SECURITY DEFINER;
COMMENT ON FUNCTION @extschema@.rate_limit_acquire(text, text, text) IS
    'takes one of the slots of key under a concurrency limit if one is free, until the transaction ends (scope transaction) or until rate_limit_release, session end or the limit''s period (scope session; gone too if the transaction or savepoint that took it rolls back); remaining = free slots after the call; refused on a standby (leases are one server''s locks)';

CREATE FUNCTION @extschema@.rate_limit_release(key text, limit_name text)
RETURNS boolean AS 'MODULE_PATHNAME', 'rate_limit_release' LANGUAGE C VOLATILE SECURITY DEFINER;
COMMENT ON FUNCTION @extschema@.rate_limit_release(text, text) IS
    'releases one of this session''s live session leases of key under the limit when the transaction commits (of its current period first; one the current transaction took first, else the oldest); a marker left by a rolled-back acquire or a shadow pass is taken first (false); false if it holds none (transaction leases end with their transaction)';

-- ---------------------------------------------------------------------------------------------------------
-- Bounded cleanup for schedulers (extension/cleanup_batches.cpp): one complete pass as short transactions,
-- rate_limit_cleanup(limit_name, batch_rows) then COMMIT, until the pass ends. Not SECURITY DEFINER (such a
-- procedure cannot commit): it runs with its caller's rights, and the caller needs EXECUTE on
-- rate_limit_cleanup, which is the owner's only unless granted. So that nobody else runs it by mistake, it
-- is not PUBLIC either. deleted is INOUT only because an OUT parameter may not follow ones with defaults:
-- its input is ignored.
CREATE PROCEDURE @extschema@.rate_limit_cleanup_batches(limit_name text DEFAULT NULL, batch_rows bigint DEFAULT 10000,
                                                        INOUT deleted bigint DEFAULT NULL)
AS 'MODULE_PATHNAME', 'rate_limit_cleanup_batches' LANGUAGE C;
COMMENT ON PROCEDURE @extschema@.rate_limit_cleanup_batches(text, bigint, bigint) IS
    'one complete rate_limit_cleanup pass in batches of batch_rows rows, committing after each; returns the rows deleted';

-- ---------------------------------------------------------------------------------------------------------
-- Several limits at once, all or nothing (extension/request_all.cpp): keys[i] under limit_names[i] for
-- costs[i] (1 where costs or the element is NULL). Consumes from every limit only if every one allows;
-- when one denies, nothing is consumed anywhere. Rows: position 0 first, the call's decision (allowed: all
-- allowed; remaining: the smallest; retry_after and reset_after: the largest; shadow_denied: any), then one
-- row per triple in the order given, each what it decided or, after a denial elsewhere, would have decided.
-- Shadow limits never make it deny.
CREATE FUNCTION @extschema@.rate_limit_request_all(keys text[], limit_names text[], costs float8[] DEFAULT NULL)
RETURNS TABLE ("position" integer, key text, limit_name text, allowed boolean, remaining bigint,
               retry_after interval, reset_after interval, shadow_denied boolean)
AS 'MODULE_PATHNAME', 'rate_limit_request_all' LANGUAGE C VOLATILE SECURITY DEFINER ROWS 3;
COMMENT ON FUNCTION @extschema@.rate_limit_request_all(text[], text[], float8[]) IS
    'consumes costs[i] units of limit_names[i] for keys[i] for every i if all allow, else none: row 0 is the call''s decision, then one row per (key, limit) in order (ROLLBACK undoes it, except for a limit with memory storage)';

-- ---------------------------------------------------------------------------------------------------------
-- Least privilege, in one place, after every object exists. First, whatever ALTER DEFAULT PRIVILEGES of the
-- installing role granted on what this script created is taken back: only the owner keeps rights on the
-- extension's tables, views and routines (a NULL ACL, PostgreSQL's default, holds no such grant).
DO $$
DECLARE
    member record;
BEGIN
    FOR member IN
        SELECT DISTINCT CASE WHEN p.oid IS NOT NULL THEN 'ROUTINE ' || p.oid::pg_catalog.regprocedure::text
                             ELSE 'TABLE ' || c.oid::pg_catalog.regclass::text END AS object,
               CASE a.grantee WHEN 0 THEN 'PUBLIC' ELSE pg_catalog.quote_ident(a.grantee::pg_catalog.regrole::text) END
                   AS grantee
          FROM pg_catalog.pg_depend d
          LEFT JOIN pg_catalog.pg_proc p ON d.classid = 'pg_catalog.pg_proc'::pg_catalog.regclass AND p.oid = d.objid
          LEFT JOIN pg_catalog.pg_class c ON d.classid = 'pg_catalog.pg_class'::pg_catalog.regclass AND c.oid = d.objid
          CROSS JOIN LATERAL pg_catalog.aclexplode(coalesce(p.proacl, c.relacl)) AS a
         WHERE d.refclassid = 'pg_catalog.pg_extension'::pg_catalog.regclass AND d.deptype = 'e'
           AND d.refobjid = (SELECT e.oid FROM pg_catalog.pg_extension e WHERE e.extname = 'pg_ratelimit')
           AND a.grantee <> coalesce(p.proowner, c.relowner)
    LOOP
        EXECUTE pg_catalog.format('REVOKE ALL ON %s FROM %s', member.object, member.grantee);
    END LOOP;
END
$$;

-- Then what everyone may do: what can only consume or read (request, reserve, request_many, request_all, throttle,
-- enforce, acquire, check, policy, the configuration and the statistics), since none of it can raise
-- anyone's allowance; rate_limit_release frees only the caller's own lease. (Why overrides and statistics
-- are as they are: their sections above.)
GRANT EXECUTE ON FUNCTION @extschema@.rate_limit_request, @extschema@.rate_limit_reserve, @extschema@.rate_limit_request_many,
                          @extschema@.rate_limit_request_all, @extschema@.rate_limit_throttle,
                          @extschema@.rate_limit_enforce, @extschema@.rate_limit_acquire,
                          @extschema@.rate_limit_release, @extschema@.rate_limit_check,
                          @extschema@.rate_limit_policy, @extschema@.rate_limit_stats_rows TO PUBLIC;
GRANT SELECT ON @extschema@.rate_limit_config, @extschema@.rate_limit_stats TO PUBLIC;

-- The rest is the owner's unless granted: giving units back (refund, reset, settle: an application role
-- that uses reservations needs rate_limit_refund or rate_limit_settle), defining limits and overrides,
-- cleaning up (rate_limit_cleanup_batches is not SECURITY DEFINER, so that it can commit: its caller also
-- needs EXECUTE on rate_limit_cleanup), resetting statistics (monitoring relies on them), the storage
-- figures, and the trigger functions (firing a trigger checks no privilege).
REVOKE ALL ON FUNCTION @extschema@.rate_limit_define, @extschema@.rate_limit_drop, @extschema@.rate_limit_refund,
                       @extschema@.rate_limit_reset, @extschema@.rate_limit_settle, @extschema@.rate_limit_cleanup,
                       @extschema@.rate_limit_memory_usage, @extschema@.rate_limit_override,
                       @extschema@.rate_limit_override_drop, @extschema@.rate_limit_stats_reset(text),
                       @extschema@.rate_limit_stats_reset(), @extschema@.rate_limit_config_changed,
                       @extschema@.rate_limit_config_row, @extschema@.rate_limit_override_changed,
                       @extschema@.rate_limit_extension_changed FROM PUBLIC;
REVOKE ALL ON PROCEDURE @extschema@.rate_limit_cleanup_batches FROM PUBLIC;
