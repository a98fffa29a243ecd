-- rate_limit_request_all with two (key, limit): one key under the limits of the ext and ext_gcra scripts
-- (bench/sql/setup.sql), all or nothing (the harness preloads both limits' keys for it).
\set k random(0, 99999)
SELECT * FROM rate_limit_request_all(ARRAY['k' || :k, 'k' || :k], ARRAY['bench', 'bench_gcra']);
