-- The client library's request statement (client/src/statements.cpp), for comparison.
\set k random(0, 99999)
SELECT d.allowed, d.remaining, (extract(epoch FROM d.retry_after) * 1000000)::int8, (extract(epoch FROM d.reset_after) * 1000000)::int8, c.rate, (extract(epoch FROM c.period) * 1000000)::int8, c.capacity FROM rate_limit_request(('k' || :k)::text, 'bench'::text, 1::float8, false::boolean) AS d LEFT JOIN rate_limit_config AS c ON c.name = 'bench'::text;
