-- Shadow mode: rate_limit_define(..., shadow => true) decides as usual but never denies. A call that would
-- have been denied is allowed, flagged shadow_denied, and consumes nothing (a denial writes nothing), so
-- the limit can be watched on live traffic before it bites. Every decision function, algorithm, storage,
-- shards and overrides; turning it on and off keeps the keys' state.
SET timezone = 'UTC';
SET intervalstyle = 'postgres';
SET pg_ratelimit.fake_now = '2026-01-01 00:00:00+00';
SELECT rate_limit_define('watch', 2, '1 hour', shadow => true);
SELECT name, shadow FROM rate_limit_config WHERE name = 'watch';

-- Two are allowed for real; the third would be denied: allowed all the same, flagged, nothing consumed.
SELECT * FROM rate_limit_request('u', 'watch');
SELECT * FROM rate_limit_request('u', 'watch');
SELECT value, ts FROM rate_limit_state WHERE limit_name = 'watch' AND key = 'u' \gset before_
SELECT * FROM rate_limit_request('u', 'watch');
SELECT * FROM rate_limit_request('u', 'watch', 2);
SELECT value = :before_value AND ts = :'before_ts' AS unchanged FROM rate_limit_state
 WHERE limit_name = 'watch' AND key = 'u';
-- The same through every other decision function.
SELECT * FROM rate_limit_check('u', 'watch');
SELECT rate_limit_enforce('u', 'watch');
SELECT * FROM rate_limit_throttle('u', 'watch');
SELECT * FROM rate_limit_request_many(ARRAY['u', 'v', 'u'], 'watch');
-- A reservation beyond max_reserved would be denied too.
SELECT rate_limit_define('watch_reserve', 2, '1 hour', max_reserved => 1, shadow => true);
SELECT * FROM rate_limit_request('u', 'watch_reserve', 2);
SELECT * FROM rate_limit_request('u', 'watch_reserve', 1, reserve => true);
SELECT * FROM rate_limit_request('u', 'watch_reserve', 1, reserve => true);
-- A reservation into debt is recorded as usual, but never makes the caller wait on a shadow limit.
SELECT rate_limit_define('watch_debt', 1, '1 second', capacity => 10, shadow => true);
SELECT allowed, remaining FROM rate_limit_request('app', 'watch_debt', 7);
SELECT * FROM rate_limit_request('app', 'watch_debt', 5, reserve => true);
SELECT allowed, shadow_denied FROM rate_limit_request('app', 'watch_debt', 1);
-- Refunds and settles are always allowed: never flagged.
SELECT * FROM rate_limit_refund('u', 'watch_reserve', 1);
SELECT * FROM rate_limit_settle('u', 'watch_reserve', 1, 3);

-- Off: the same key is denied for real, from the state the shadow calls left (not reset).
SELECT rate_limit_define('watch', 2, '1 hour');
SELECT * FROM rate_limit_request('u', 'watch');
-- And on again, directly in the table by its owner: the cached definition follows.
UPDATE rate_limit_config SET shadow = true WHERE name = 'watch';
SELECT * FROM rate_limit_request('u', 'watch');
-- Inside an open transaction, the committed change is seen at the next statement.
BEGIN;
SELECT allowed, shadow_denied FROM rate_limit_request('u', 'watch');
SELECT rate_limit_define('watch', 2, '1 hour', shadow => false);
SELECT allowed, shadow_denied FROM rate_limit_request('u', 'watch');
ROLLBACK;

-- Every algorithm, storage and shards: the call that would deny is allowed and flagged, and a check
-- afterwards shows nothing was consumed by it.
CREATE TEMP TABLE kinds (name text, algorithm text, storage text, shards int);
INSERT INTO kinds VALUES ('s_tb', 'token_bucket', 'durable', 1), ('s_gcra', 'gcra', 'unlogged', 1),
    ('s_fw', 'fixed_window', 'memory', 1), ('s_sw', 'sliding_window', 'durable', 1),
    ('s_sh', 'token_bucket', 'durable', 2);
SELECT rate_limit_define(name, 4, '1 hour', algorithm, storage => storage, shards => shards, shadow => true)
  FROM kinds ORDER BY name;
SELECT k.name, r.allowed, r.remaining, r.shadow_denied
  FROM kinds k, LATERAL rate_limit_request('key', k.name, 2) r ORDER BY k.name;
SELECT k.name, r.allowed, r.remaining, r.shadow_denied
  FROM kinds k, LATERAL rate_limit_request('key', k.name, 2) r ORDER BY k.name;
SELECT k.name, r.allowed, r.remaining, r.shadow_denied
  FROM kinds k, LATERAL rate_limit_request('key', k.name, 2) r ORDER BY k.name;
SELECT k.name, r.allowed, r.remaining, r.shadow_denied
  FROM kinds k, LATERAL rate_limit_check('key', k.name, 1) r ORDER BY k.name;

-- A key's override keeps the limit's shadow flag (only rate, capacity and max_reserved are the key's).
SELECT rate_limit_override('gold', 's_tb', 6);
SELECT allowed, remaining, shadow_denied FROM rate_limit_request('gold', 's_tb', 6);
SELECT allowed, remaining, shadow_denied FROM rate_limit_request('gold', 's_tb', 1);

-- A cost beyond the capacity is still an error: such a request could never succeed, shadow or not.
SELECT * FROM rate_limit_request('u', 'watch', 3);
-- shadow must be given as true or false.
SELECT rate_limit_define('watch', 2, '1 hour', shadow => NULL);
UPDATE rate_limit_config SET shadow = NULL WHERE name = 'watch';
SELECT name, shadow FROM rate_limit_config WHERE name = 'watch';
SELECT rate_limit_drop(name) FROM rate_limit_config WHERE name <> 'default' ORDER BY name;
