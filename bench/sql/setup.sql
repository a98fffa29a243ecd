-- The benchmark's own objects, created afresh on every run (it may be pointed at an existing database
-- with --conninfo, so it drops only what it created itself).
CREATE EXTENSION IF NOT EXISTS pg_ratelimit;

DROP TABLE IF EXISTS bench_update, bench_bucket;
DROP FUNCTION IF EXISTS rate_limiting_token_bucket_request(text, int, int);
DROP TABLE IF EXISTS rate_limiting_token_bucket;
SELECT rate_limit_drop(name) FROM rate_limit_config
 WHERE name IN ('bench', 'bench_deny', 'bench_shards4', 'bench_shards16', 'bench_unlogged', 'bench_memory',
                'bench_gcra', 'bench_fixed_window', 'bench_sliding_window', 'bench_calendar_month');

-- The floor for a durable per-key write: one plain UPDATE of one indexed row. The reference tables use
-- what the extension's state table uses ("C" collation, fillfactor 80 for HOT updates), so that they
-- are the best case of what a user could write and the comparison isolates the per-call work.
CREATE TABLE bench_update (
    id text COLLATE "C" PRIMARY KEY,
    n  bigint NOT NULL
) WITH (fillfactor = 80);

-- The single-statement token bucket (INSERT ... ON CONFLICT DO UPDATE ... RETURNING): the seed's
-- columns and arithmetic in one statement.
CREATE TABLE bench_bucket (
    id text COLLATE "C" PRIMARY KEY,
    tk bigint NOT NULL,
    ts timestamptz NOT NULL
) WITH (fillfactor = 80);

-- Limits that admit (the realistic hot path: an admitted request writes its row) and that deny (each
-- key's single unit is taken by the preload, and refills once a century: a denial writes nothing).
SELECT rate_limit_define('bench', rate => 1e9, period => '1 second');
SELECT rate_limit_define('bench_deny', rate => 1, period => '36500 days', capacity => 1);

-- The hot key's limits with hot-key shards (the SERIALIZABLE hot-key cell and bench/pgbench_shards.sh):
-- the same generosity as 'bench' (every request admitted), the key's allowance split over 4 and 16 rows,
-- so that concurrent callers of one key write different rows. 'bench' itself is the one-shard case.
SELECT rate_limit_define('bench_shards4', rate => 1e9, period => '1 second', shards => 4);
SELECT rate_limit_define('bench_shards16', rate => 1e9, period => '1 second', shards => 16);

-- The same generosity in the other storage modes (bench/run.sh --storage-modes): an UNLOGGED table, and
-- shared memory, which exists only when the server preloads the extension (shared_preload_libraries =
-- 'pg_ratelimit'; bench/run.sh starts its server so): elsewhere the memory limit is left undefined, and
-- the harness says so if a system needs it.
SELECT rate_limit_define('bench_unlogged', rate => 1e9, period => '1 second', storage => 'unlogged');
DO $$
BEGIN
    IF (SELECT capacity FROM rate_limit_storage WHERE storage = 'memory') > 0 THEN  -- zero unless preloaded
        PERFORM rate_limit_define('bench_memory', rate => 1e9, period => '1 second', storage => 'memory');
    END IF;
END
$$;

-- The same generosity under the other algorithms (bench/run.sh --algorithms; 'bench' is the token bucket):
-- every request admitted and written, so that the systems differ only in the algorithm's arithmetic. A
-- sliding window's capacity is its rate and it takes no reservations, which rate_limit_define sets for it.
-- Without `start`, each window's grid is offset per key (a hash of the key), as an application's would be.
SELECT rate_limit_define('bench_gcra', rate => 1e9, period => '1 second', algorithm => 'gcra');
SELECT rate_limit_define('bench_fixed_window', rate => 1e9, period => '1 second', algorithm => 'fixed_window');
SELECT rate_limit_define('bench_sliding_window', rate => 1e9, period => '1 second', algorithm => 'sliding_window');
-- A calendar quota: a fixed window of calendar months in a time zone with daylight saving.
SELECT rate_limit_define('bench_calendar_month', rate => 1e12, period => '1 month', algorithm => 'fixed_window',
                         time_zone => 'Europe/Paris');
