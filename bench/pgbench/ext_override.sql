-- rate_limit_request, admitted, on keys with an override (bench/sql/overrides_bench.sql must have run).
\set k random(0, 99)
SELECT * FROM rate_limit_request('vip' || :k, 'bench');
