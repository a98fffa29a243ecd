-- rate_limit_request_all with one (key, limit): the ext script's request through the all-or-nothing call.
\set k random(0, 99999)
SELECT * FROM rate_limit_request_all(ARRAY['k' || :k], ARRAY['bench']);
