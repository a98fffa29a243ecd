-- rate_limit_request, denied: reads, writes nothing.
\set k random(0, 99999)
SELECT * FROM rate_limit_request('k' || :k, 'bench_deny');
