-- pg_ratelimit through PL/Proxy: the single node's SQL API on a proxy database, each key's calls routed to
-- the partition that owns it. Run with psql -f in a bare proxy database (no pg_ratelimit there); every
-- partition runs pg_ratelimit. The partitions are the SQL/MED server pg_ratelimit of the plproxy foreign
-- data wrapper, which this file does not create (it holds no addresses):
--
--   CREATE SERVER pg_ratelimit FOREIGN DATA WRAPPER plproxy
--       OPTIONS (p0 'host=... dbname=...', p1 '...', ...);      -- 1, 2, 4, 8... partitions
--   CREATE USER MAPPING FOR PUBLIC SERVER pg_ratelimit OPTIONS (user 'limiter');
--
-- (scripts/cluster.sh makes both.) Routing: partition hashtext(key) & (N - 1), N a power of two: the same
-- hash the C++ client's Options::partitions uses. What this keeps and loses of a single node's promises
-- (each remote call commits on its own: no rollback, no all-or-nothing across partitions, no leases):
-- docs/scale-out.md.
\set ON_ERROR_STOP on
CREATE EXTENSION IF NOT EXISTS plproxy;

-- The single node's result types, with the same column names (PL/Proxy matches columns by name).
CREATE TYPE rate_limit_decision AS (
    allowed boolean, remaining bigint, retry_after interval, reset_after interval, shadow_denied boolean);

-- The partition a key belongs to, as a hash for RUN ON (PL/Proxy takes it & (N - 1)). What a single node
-- refuses about the key and the cost is refused here, before anything is sent: a NULL key (22004; a NULL
-- hash is an internal error in PL/Proxy), a key of more than 1,024 bytes (22001), a cost outside 1e-9 to
-- 1e12 (22023; NULL is 1). A remote error would cost more than the error: PL/Proxy drops its connection
-- to the partition after every one, and the partition forks a new backend for the next call.
CREATE FUNCTION rate_limit_key_hash(key text, cost float8 DEFAULT 1) RETURNS integer LANGUAGE plpgsql IMMUTABLE AS $$
BEGIN
    IF key IS NULL THEN
        RAISE EXCEPTION 'key must not be null' USING ERRCODE = 'null_value_not_allowed';
    END IF;
    IF octet_length(key) > 1024 THEN
        RAISE EXCEPTION 'rate limit key is too long' USING ERRCODE = 'string_data_right_truncation',
            DETAIL = format('The key is %s bytes; the maximum is 1024.', octet_length(key));
    END IF;
    IF cost IS NOT NULL AND NOT (cost >= 1e-9 AND cost <= 1e12) THEN
        RAISE EXCEPTION 'cost must be between 1e-09 and 1e+12' USING ERRCODE = 'invalid_parameter_value',
            DETAIL = format('cost is %s.', cost);
    END IF;
    RETURN pg_catalog.hashtext(key);
END $$;

-- The number of partitions (the p0, p1... options of the server pg_ratelimit). Refused when PL/Proxy would
-- route otherwise than hashtext(key) & (N - 1), as the client and rate_limit_partition_of reckon: with
-- modular_mapping (hash mod N), a key would be decided elsewhere than where they look for it.
CREATE FUNCTION rate_limit_partitions() RETURNS integer LANGUAGE plpgsql STABLE AS $$
DECLARE
    options text[];
BEGIN
    SELECT s.srvoptions INTO options FROM pg_catalog.pg_foreign_server s WHERE s.srvname = 'pg_ratelimit';
    IF EXISTS (SELECT 1 FROM pg_catalog.unnest(options) o WHERE o ~ '^modular_mapping=' AND o !~ '^modular_mapping=(0|false|off|no)$') THEN
        RAISE EXCEPTION 'the server pg_ratelimit sets modular_mapping: pg_ratelimit routes by hashtext(key) & (N - 1)'
            USING ERRCODE = 'feature_not_supported',
                  HINT = 'ALTER SERVER pg_ratelimit OPTIONS (DROP modular_mapping), with a power of two of partitions.';
    END IF;
    RETURN (SELECT count(*)::integer FROM pg_catalog.unnest(options) o WHERE o ~ '^p[0-9]+=');
END $$;

-- Which partition holds a key: 0 to N - 1.
CREATE FUNCTION rate_limit_partition_of(key text) RETURNS integer LANGUAGE sql STABLE AS $$
    SELECT rate_limit_key_hash(key) & (rate_limit_partitions() - 1)
$$;

-- ---- Routed by key: the single node's functions, names, parameter names and defaults ----------------------

CREATE FUNCTION rate_limit_request(key text, limit_name text DEFAULT 'default', cost float8 DEFAULT 1,
                                   reserve boolean DEFAULT false)
RETURNS rate_limit_decision AS $$ CLUSTER 'pg_ratelimit'; RUN ON rate_limit_key_hash(key, cost); $$ LANGUAGE plproxy;

CREATE FUNCTION rate_limit_reserve(key text, limit_name text DEFAULT 'default', cost float8 DEFAULT 1,
                                   max_wait interval DEFAULT NULL)
RETURNS rate_limit_decision AS $$ CLUSTER 'pg_ratelimit'; RUN ON rate_limit_key_hash(key, cost); $$ LANGUAGE plproxy;

CREATE FUNCTION rate_limit_check(key text, limit_name text DEFAULT 'default', cost float8 DEFAULT 1)
RETURNS rate_limit_decision AS $$ CLUSTER 'pg_ratelimit'; RUN ON rate_limit_key_hash(key, cost); $$ LANGUAGE plproxy;

CREATE FUNCTION rate_limit_refund(key text, limit_name text DEFAULT 'default', cost float8 DEFAULT 1)
RETURNS rate_limit_decision AS $$ CLUSTER 'pg_ratelimit'; RUN ON rate_limit_key_hash(key, cost); $$ LANGUAGE plproxy;

CREATE FUNCTION rate_limit_settle(key text, limit_name text, reserved float8, actual float8)
RETURNS rate_limit_decision AS $$ CLUSTER 'pg_ratelimit'; RUN ON rate_limit_key_hash(key); $$ LANGUAGE plproxy;

CREATE FUNCTION rate_limit_reset(key text, limit_name text DEFAULT 'default')
RETURNS void AS $$ CLUSTER 'pg_ratelimit'; RUN ON rate_limit_key_hash(key); $$ LANGUAGE plproxy;

CREATE FUNCTION rate_limit_throttle(
    key text, limit_name text DEFAULT 'default', cost float8 DEFAULT 1,
    OUT limited integer, OUT "limit" bigint, OUT remaining bigint, OUT retry_after bigint, OUT reset_after bigint)
AS $$ CLUSTER 'pg_ratelimit'; RUN ON rate_limit_key_hash(key, cost); $$ LANGUAGE plproxy;

CREATE FUNCTION rate_limit_policy(
    key text, limit_name text DEFAULT 'default', OUT algorithm text, OUT rate float8, OUT period interval,
    OUT capacity float8, OUT max_reserved float8, OUT overridden boolean, OUT limit_has_overrides boolean,
    OUT time_zone text)
AS $$ CLUSTER 'pg_ratelimit'; RUN ON rate_limit_key_hash(key); $$ LANGUAGE plproxy;

CREATE FUNCTION rate_limit_override(key text, limit_name text, rate float8, capacity float8 DEFAULT NULL,
                                    max_reserved float8 DEFAULT NULL, rescale text DEFAULT 'proportional')
RETURNS void AS $$ CLUSTER 'pg_ratelimit'; RUN ON rate_limit_key_hash(key); $$ LANGUAGE plproxy;

CREATE FUNCTION rate_limit_override_drop(key text, limit_name text)
RETURNS boolean AS $$ CLUSTER 'pg_ratelimit'; RUN ON rate_limit_key_hash(key); $$ LANGUAGE plproxy;

-- rate_limit_enforce: RL001 raised here, with the single node's message, DETAIL and HINT. (Raised on the
-- partition, it would come back prefixed "REMOTE ERROR:" with a DETAIL that no longer parses, and PL/Proxy
-- drops its connection after every remote error: a reconnection per denial.)
CREATE FUNCTION rate_limit_clipped(value text) RETURNS text LANGUAGE plpgsql IMMUTABLE AS $$
DECLARE
    n integer := 64;
BEGIN
    IF octet_length(value) <= 64 THEN RETURN value; END IF;
    WHILE octet_length(left(value, n)) > 64 LOOP n := n - 1; END LOOP;
    RETURN left(value, n) || '...';
END $$;

CREATE FUNCTION rate_limit_enforce(key text, limit_name text DEFAULT 'default', cost float8 DEFAULT 1)
RETURNS void LANGUAGE plpgsql AS $$
DECLARE
    d rate_limit_decision;
    seconds text;
BEGIN
    d := rate_limit_request(key, limit_name, cost);
    IF d.allowed AND NOT d.shadow_denied THEN RETURN; END IF;
    -- A shadow denial's decision shows retry_after 0: a single node's notice has the real one, not the proxy.
    seconds := (extract(epoch FROM d.retry_after))::numeric(30, 6)::text;
    IF NOT d.allowed THEN
        RAISE EXCEPTION 'rate limit % exceeded for key %', to_json(rate_limit_clipped(limit_name)),
                        to_json(rate_limit_clipped(key))
            USING ERRCODE = 'RL001',
                  DETAIL = format('{"limit":%s,"key":%s,"retry_after":%s}', to_json(limit_name), to_json(key), seconds),
                  HINT = format('Try again in %s seconds. SQLSTATE RL001: the DETAIL is a JSON object with the limit, '
                                'the key and retry_after in seconds.', seconds);
    END IF;
    RAISE NOTICE 'rate limit % (in shadow mode) would have been exceeded for key %', to_json(rate_limit_clipped(limit_name)),
                 to_json(rate_limit_clipped(key))
        USING ERRCODE = 'RL001',
              DETAIL = format('{"limit":%s,"key":%s,"retry_after":%s}', to_json(limit_name), to_json(key), seconds),
              HINT = format('Try again in %s seconds. SQLSTATE RL001: the DETAIL is a JSON object with the limit, '
                            'the key and retry_after in seconds.', seconds);
END $$;

-- ---- Many keys: split by partition, the caller's positions in order ----------------------------------------

CREATE FUNCTION rate_limit_request_many_split(keys text[], limit_name text, costs float8[])
RETURNS TABLE (key text, "position" integer, allowed boolean, remaining bigint, retry_after interval,
               reset_after interval, shadow_denied boolean) AS $$
    CLUSTER 'pg_ratelimit';
    SPLIT keys, costs;
    RUN ON rate_limit_key_hash(keys);
    SELECT * FROM rate_limit_request_many(keys, limit_name, costs);
$$ LANGUAGE plproxy;

-- Each partition numbers its keys from 1, in the order given; a key always goes to the same partition, so
-- the k-th row of a key there is the key's k-th occurrence in the caller's array.
CREATE FUNCTION rate_limit_request_many(keys text[], limit_name text DEFAULT 'default', costs float8[] DEFAULT NULL)
RETURNS TABLE (key text, "position" integer, allowed boolean, remaining bigint, retry_after interval,
               reset_after interval, shadow_denied boolean) LANGUAGE plpgsql AS $$
BEGIN
    IF keys IS NULL THEN RAISE EXCEPTION 'keys must not be null' USING ERRCODE = 'null_value_not_allowed'; END IF;
    IF array_ndims(keys) > 1 OR array_ndims(costs) > 1 THEN
        RAISE EXCEPTION 'keys and costs must be one-dimensional arrays' USING ERRCODE = 'array_subscript_error';
    END IF;
    IF costs IS NOT NULL AND cardinality(costs) <> cardinality(keys) THEN
        RAISE EXCEPTION 'costs must have one element per key' USING ERRCODE = 'array_subscript_error',
            DETAIL = format('There are %s keys and %s costs.', cardinality(keys), cardinality(costs));
    END IF;
    IF cardinality(keys) = 0 THEN RETURN; END IF;
    -- A NULL key is refused before anything is sent (a single node refuses the whole call the same way).
    IF array_position(keys, NULL) IS NOT NULL THEN
        RAISE EXCEPTION 'key % must not be null', array_position(keys, NULL) USING ERRCODE = 'null_value_not_allowed';
    END IF;
    -- Every key and cost checked before the first partition decides: a single node refuses such a call
    -- whole, and through the proxy the partitions before the bad element would have committed theirs.
    PERFORM rate_limit_key_hash(g.k, g.c) FROM unnest(keys, costs) AS g(k, c);
    RETURN QUERY
    WITH given AS (
        SELECT g.k, g.i, row_number() OVER (PARTITION BY g.k ORDER BY g.i) AS occurrence
          FROM unnest(keys) WITH ORDINALITY AS g(k, i)),
    decided AS (
        SELECT r.*, row_number() OVER (PARTITION BY r.key ORDER BY r."position") AS occurrence
          FROM rate_limit_request_many_split(keys, limit_name,
                   coalesce(costs, array_fill(NULL::float8, ARRAY[cardinality(keys)]))) r)
    SELECT d.key, given.i::integer, d.allowed, d.remaining, d.retry_after, d.reset_after, d.shadow_denied
      FROM given JOIN decided d ON d.key = given.k AND d.occurrence = given.occurrence
     ORDER BY given.i;
END $$;

-- ---- Several limits at once: only on one partition -----------------------------------------------------------

-- The partition of request_all's keys, for RUN ON: refused (0A000) when they span partitions, since all or
-- nothing cannot span partitions whose calls commit each on its own; the single node's checks of the arrays
-- before anything is sent.
CREATE FUNCTION rate_limit_keys_hash(keys text[], limit_names text[], costs float8[])
RETURNS integer LANGUAGE plpgsql STABLE AS $$
DECLARE
    spread integer;
BEGIN
    IF keys IS NULL OR limit_names IS NULL THEN
        RAISE EXCEPTION 'keys and limit_names must not be null' USING ERRCODE = 'null_value_not_allowed';
    END IF;
    IF array_ndims(keys) > 1 OR array_ndims(limit_names) > 1 OR array_ndims(costs) > 1 THEN
        RAISE EXCEPTION 'keys, limit_names and costs must be one-dimensional arrays' USING ERRCODE = 'array_subscript_error';
    END IF;
    IF cardinality(keys) = 0 THEN
        RAISE EXCEPTION 'keys must not be empty' USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF array_position(keys, NULL) IS NOT NULL THEN
        RAISE EXCEPTION 'key % must not be null', array_position(keys, NULL) USING ERRCODE = 'null_value_not_allowed';
    END IF;
    PERFORM rate_limit_key_hash(g.k, g.c) FROM unnest(keys, costs) AS g(k, c);
    SELECT count(DISTINCT rate_limit_partition_of(k)) INTO spread FROM unnest(keys) k;
    IF spread > 1 THEN
        RAISE EXCEPTION 'rate_limit_request_all through PL/Proxy needs all its keys on one partition'
            USING ERRCODE = 'feature_not_supported',
                  DETAIL = format('The %s keys are on %s of the %s partitions; all or nothing cannot span partitions, '
                                  'whose calls commit each on its own.', cardinality(keys), spread, rate_limit_partitions()),
                  HINT = 'Give the keys of one call a common part that decides their partition, or call '
                         'rate_limit_request for each and give back what was taken if one is denied.';
    END IF;
    RETURN pg_catalog.hashtext(keys[array_lower(keys, 1)]);
END $$;

-- The partition is computed from the keys themselves: no argument of the caller's can send a key elsewhere
-- (a helper taking the partition as an argument let any role decide one key on every partition).
CREATE FUNCTION rate_limit_request_all(keys text[], limit_names text[], costs float8[] DEFAULT NULL)
RETURNS TABLE ("position" integer, key text, limit_name text, allowed boolean, remaining bigint,
               retry_after interval, reset_after interval, shadow_denied boolean) AS $$
    CLUSTER 'pg_ratelimit';
    RUN ON rate_limit_keys_hash(keys, limit_names, costs);
    SELECT * FROM rate_limit_request_all(keys, limit_names, costs);
$$ LANGUAGE plproxy;

-- ---- On every partition --------------------------------------------------------------------------------------

-- RUN ON ALL needs a set-returning function: one row per partition, the remote void read as text.
CREATE FUNCTION rate_limit_define_on_partitions(
    name text, rate float8, period interval, algorithm text, capacity float8, max_reserved float8,
    start timestamptz, shards integer, storage text, jitter interval, rescale text, time_zone text, shadow boolean)
RETURNS SETOF text AS $$
    CLUSTER 'pg_ratelimit';
    RUN ON ALL;
    SELECT rate_limit_define(name, rate, period, algorithm, capacity, max_reserved, start, shards, storage, jitter,
                             rescale, time_zone, shadow)::text;
$$ LANGUAGE plproxy;

-- Defines the limit on every partition. Each partition commits on its own: if one fails (reported as the
-- error of this call), the others may already hold the new definition. Calling it again is harmless (a
-- redefinition with the same numbers changes nothing); rate_limit_partitions_agree(name) tells whether
-- every partition decides under the same numbers.
CREATE FUNCTION rate_limit_define(
    name text, rate float8, period interval, algorithm text DEFAULT 'token_bucket', capacity float8 DEFAULT NULL,
    max_reserved float8 DEFAULT NULL, start timestamptz DEFAULT NULL, shards integer DEFAULT 1,
    storage text DEFAULT 'durable', jitter interval DEFAULT NULL, rescale text DEFAULT 'proportional',
    time_zone text DEFAULT NULL, shadow boolean DEFAULT false)
RETURNS void LANGUAGE plpgsql AS $$
BEGIN
    PERFORM count(*) FROM rate_limit_define_on_partitions(name, rate, period, algorithm, capacity, max_reserved,
                                                          start, shards, storage, jitter, rescale, time_zone, shadow);
END $$;

CREATE FUNCTION rate_limit_drop_on_partitions(name text) RETURNS SETOF text AS $$
    CLUSTER 'pg_ratelimit';
    RUN ON ALL;
    SELECT rate_limit_drop(name)::text;
$$ LANGUAGE plproxy;

CREATE FUNCTION rate_limit_drop(name text) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
    PERFORM count(*) FROM rate_limit_drop_on_partitions(name);
END $$;

CREATE FUNCTION rate_limit_cleanup_on_partitions(limit_name text, max_rows bigint) RETURNS SETOF bigint AS $$
    CLUSTER 'pg_ratelimit';
    RUN ON ALL;
    SELECT rate_limit_cleanup(limit_name, max_rows);
$$ LANGUAGE plproxy;

-- The rows deleted on all partitions together (max_rows bounds each partition's call).
CREATE FUNCTION rate_limit_cleanup(limit_name text DEFAULT NULL, max_rows bigint DEFAULT NULL)
RETURNS bigint LANGUAGE sql AS $$
    SELECT coalesce(sum(n), 0)::bigint FROM rate_limit_cleanup_on_partitions(limit_name, max_rows) n
$$;

-- The limit's definition on each partition: every column of its rate_limit_config row but epoch (a count of
-- the partition's own redefinitions); a partition without the limit returns no row.
CREATE FUNCTION rate_limit_config_on_partitions(limit_name text,
    OUT algorithm text, OUT rate float8, OUT period interval, OUT capacity float8, OUT max_reserved float8,
    OUT start timestamptz, OUT shards integer, OUT storage text, OUT jitter interval, OUT time_zone text,
    OUT shadow boolean)
RETURNS SETOF record AS $$
    CLUSTER 'pg_ratelimit';
    RUN ON ALL;
    SELECT algorithm, rate, period, capacity, max_reserved, start, shards, storage, jitter, time_zone, shadow
      FROM rate_limit_config WHERE name = limit_name;
$$ LANGUAGE plproxy;

-- Whether every partition holds the limit with the same definition (after a define that failed on some):
-- the numbers, and what decides how (storage, shards, shadow, start, jitter, time zone).
CREATE FUNCTION rate_limit_partitions_agree(limit_name text) RETURNS boolean LANGUAGE sql AS $$
    SELECT count(*) = rate_limit_partitions()
       AND count(DISTINCT (algorithm, rate, period, capacity, max_reserved, start, shards, storage, jitter,
                           time_zone, shadow)) = 1
      FROM rate_limit_config_on_partitions(limit_name)
$$;

-- ---- Not through PL/Proxy ----------------------------------------------------------------------------------

-- Leases are held by the session that took them, and each remote call of PL/Proxy commits on its own on a
-- connection of the proxy's: a transaction lease would end with the call, a session lease would belong to
-- the proxy's connection (lost at its next reconnection). Refused, with where to go instead.
CREATE FUNCTION rate_limit_acquire(key text, limit_name text, scope text DEFAULT 'transaction')
RETURNS rate_limit_decision LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'leases (rate_limit_acquire) do not work through PL/Proxy'
        USING ERRCODE = 'feature_not_supported',
              DETAIL = 'Each remote call commits on its own: a lease would end with the call, or belong to the '
                       'proxy''s connection.',
              HINT = format('Connect to partition %s (rate_limit_partition_of(key)) and call rate_limit_acquire there.',
                            rate_limit_partition_of(key));
END $$;

CREATE FUNCTION rate_limit_release(key text, limit_name text) RETURNS boolean LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'leases (rate_limit_release) do not work through PL/Proxy'
        USING ERRCODE = 'feature_not_supported',
              HINT = format('Release on the connection to partition %s that took the lease.', rate_limit_partition_of(key));
END $$;

-- ---- Privileges, as on a single node -------------------------------------------------------------------------
-- Everyone may consume and read; giving units back, limits and overrides, cleanup are the owner's. PL/Proxy
-- also needs the caller to have USAGE on the server pg_ratelimit (GRANT USAGE ON FOREIGN SERVER pg_ratelimit
-- TO app): a role with it may make a user mapping of its own (user and password only), so the partitions
-- must authenticate the mapping's role (a password, not trust) for it to mean anything. The partitions see
-- the user mapping's role: give it the grants the proxy's callers need, and no more.
REVOKE ALL ON FUNCTION rate_limit_refund, rate_limit_settle, rate_limit_reset, rate_limit_override,
                       rate_limit_override_drop, rate_limit_define, rate_limit_drop, rate_limit_cleanup,
                       rate_limit_define_on_partitions, rate_limit_drop_on_partitions,
                       rate_limit_cleanup_on_partitions FROM PUBLIC;
