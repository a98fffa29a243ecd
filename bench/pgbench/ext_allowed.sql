-- rate_limit_request reading one field: no FunctionScan, no tuplestore.
\set k random(0, 99999)
SELECT (rate_limit_request('k' || :k, 'bench')).allowed;
