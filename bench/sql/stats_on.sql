-- bench/instructions.sh --setup: preload the library (the server restarts under callgrind after the setup), so
-- that statistics are counted (extension/stats/stats.hpp); bench/sql/stats_off.sql then turns them off.
ALTER SYSTEM SET shared_preload_libraries = 'pg_ratelimit';
