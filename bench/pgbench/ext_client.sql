-- The client library's request statement (client/src/statements.cpp), for comparison.
\set k random(0, 99999)
SELECT d.allowed, d.remaining, extract(epoch FROM d.retry_after), extract(epoch FROM d.reset_after) FROM rate_limit_request(('k' || :k)::text, 'bench'::text, 1::float8, false::boolean) AS d;
