-- The single-statement SQL token bucket (the harness's statement, constants inlined).
\set k random(0, 99999)
INSERT INTO bench_bucket AS b (id, tk, ts) VALUES ('k' || :k, 60 * 1000000 - 1, clock_timestamp()) ON CONFLICT (id) DO UPDATE SET ts = now(), tk = greatest(least(b.tk - 1 + 1000000 * extract(epoch FROM clock_timestamp() - b.ts), 60 * 1000000), -1) RETURNING tk;
