-- rate_limit_request on the memory limit (storage => 'memory'; the harness's statement).
\set k random(0, 99999)
SELECT * FROM rate_limit_request('k' || :k, 'bench_memory');
