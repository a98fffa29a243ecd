-- The floor for a durable write to one hot row (bench/sql/setup.sql).
UPDATE bench_update SET n = n + 1 WHERE id = 'k0';
