-- rate_limit_request_many on the memory limit, 1,000 random keys per call (the array built in the server).
SELECT count(*) FROM rate_limit_request_many(ARRAY(SELECT 'k' || (random() * 99999)::int FROM generate_series(1, 1000)), 'bench_memory');
