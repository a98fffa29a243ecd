-- rate_limit_acquire + COMMIT (a transaction lease, released at commit) on one of 100,000 keys of the
-- concurrency limit :lim (pgbench -D lim=...).
\set k random(0, 99999)
BEGIN;
SELECT * FROM rate_limit_acquire('k' || :k, :lim);
COMMIT;
