-- GCRA (generic cell rate algorithm) rate limiter for Redis: the usual Lua script behind redis_rate,
-- redis-cell and most "Redis rate limiter" recipes, i.e. what many users would pick instead of
-- pg_ratelimit. One string per actor holds its theoretical arrival time (TAT), in microseconds of the
-- server's clock.
--
--   EVALSHA <sha> 1 <key> <emission_us> <burst> <cost>
--     emission_us  microseconds per unit (period / rate)
--     burst        units that may be taken at once (the bucket's capacity)
--     cost         units this request takes
--   returns {allowed (1/0), remaining, retry_after_us, reset_after_us}
--
-- Redis 7 replicates a script's effects, not the script, so reading TIME here is allowed and gives
-- every client the same clock (like the extension's use of the server's clock).
local emission = tonumber(ARGV[1])
local burst = tonumber(ARGV[2])
local cost = tonumber(ARGV[3])

local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])

local tat = tonumber(redis.call('GET', KEYS[1]))
if tat == nil or tat < now then
  tat = now
end

local new_tat = tat + cost * emission
local tolerance = burst * emission
local allow_at = new_tat - tolerance
if allow_at > now then
  -- Denied: nothing is written.
  return {0, 0, allow_at - now, tat - now}
end

local reset_after = new_tat - now
-- The key could expire as soon as it is full again (after reset_after); it is kept an hour longer so
-- that, like the SQL systems (which keep rows until a cleanup), the steady state updates existing keys.
-- %d: tostring() would print a 16-digit microsecond count in exponent notation and lose digits.
redis.call('SET', KEYS[1], string.format('%d', new_tat), 'PX', math.ceil(reset_after / 1000) + 3600000)
return {1, math.floor((tolerance - reset_after) / emission), 0, reset_after}
