-- The floor for a durable per-key write (bench/sql/setup.sql).
\set k random(0, 99999)
UPDATE bench_update SET n = n + 1 WHERE id = 'k' || :k;
