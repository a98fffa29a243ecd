-- rate_limit_request on the memory limit as a scalar: the decision as one record column, no FunctionScan.
\set k random(0, 99999)
SELECT rate_limit_request('k' || :k, 'bench_memory');
