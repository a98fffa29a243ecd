-- rate_limit_request + COMMIT in an explicit transaction: the same shape as ext_acquire.sql, for comparison.
\set k random(0, 99999)
BEGIN;
SELECT * FROM rate_limit_request('k' || :k, 'bench');
COMMIT;
