-- The seed's PL/pgSQL function as published (bench/sql/seed_token_bucket.sql).
\set k random(0, 99999)
SELECT rate_limiting_token_bucket_request('k' || :k, 1000000, 60);
