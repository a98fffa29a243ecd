-- bench/instructions.sh --setup: the library preloaded as with bench/sql/stats_on.sql, and every later
-- connection to this database with pg_ratelimit.stats = off: the cost of a call without counting.
ALTER SYSTEM SET shared_preload_libraries = 'pg_ratelimit';
DO $$ BEGIN EXECUTE format('ALTER DATABASE %I SET pg_ratelimit.stats = off', current_database()); END $$;
