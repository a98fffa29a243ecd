-- One SERIALIZABLE transaction per call on the hot key k0 of the limit given with -D limit=NAME (run with
-- -M prepared, so that :limit is a parameter). pgbench --max-tries runs it again after a 40001.
-- Not in bench/pgbench/: bench/instructions.sh runs every script there, and this one needs :limit.
BEGIN ISOLATION LEVEL SERIALIZABLE;
SELECT * FROM rate_limit_request('k0', :limit);
COMMIT;
