-- Bad input, as a table: every function, every argument, crossed with the awkward values of its type
-- (NULL, NaN, infinities, -0, zero, tiny and huge numbers, over-long and odd-byte keys and names, unknown
-- names, odd periods, algorithms and start times), the other arguments holding good values. Each row
-- states what the call did: the SQLSTATE and message of its error, or 'ok' and its result. Valid values
-- at the boundaries are in the table too, as controls that show the harness can pass.
--
-- Each case runs in its own savepoint, which is always rolled back: an error rolls it back anyway, and a
-- valid call that wrote (a request, a definition, a drop) is undone after its effect has been recorded,
-- so that the tables end byte-for-byte as they began. Besides the effect, each row shows how many rows
-- the case inserted, updated or deleted (PostgreSQL's per-transaction counters, which keep counting the
-- writes of rolled-back savepoints): an error must show none, since every bad input is refused before
-- anything is written.
--
-- Infinite intervals, which PostgreSQL 17 added, are tested apart (sql/infinite_intervals.sql), so that
-- this table's output is the same on every version.
SET timezone = 'UTC';
SET datestyle = 'ISO';
SET intervalstyle = 'postgres';
SET extra_float_digits = 3;
SET pg_ratelimit.fake_now = '2026-01-01 00:00:00+00';

-- Known state: limits and keys whose rows the cases could touch. None of the keys is at full capacity,
-- so that rate_limit_cleanup has something to judge and nothing to delete.
SELECT name, algorithm FROM rate_limit_config ORDER BY name;
SELECT count(*) AS state_rows FROM rate_limit_state;
SELECT rate_limit_define('tb', rate => 10, period => '1 minute', max_reserved => 5);
SELECT rate_limit_define('fw', rate => 5, period => '1 hour', algorithm => 'fixed_window',
                         start => '2026-01-01 00:00:00+00');
SELECT rate_limit_define(repeat('n', 128), rate => 3, period => '1 second');   -- the longest name
SELECT allowed, remaining FROM rate_limit_request('half', 'tb', 5);
SELECT allowed, remaining FROM rate_limit_request('debt', 'tb', 10);
SELECT allowed, remaining, retry_after FROM rate_limit_request('debt', 'tb', 3, reserve => true);
SELECT allowed, remaining FROM rate_limit_request(repeat('k', 1024), 'tb', 2);  -- the longest key
SELECT allowed, remaining FROM rate_limit_request('used', 'fw', 2);
SELECT allowed, remaining FROM rate_limit_request('half', repeat('n', 128), 1);
-- A per-key override (its numbers explicit, so that no redefinition below depends on it).
SELECT rate_limit_override('vip', 'tb', 20, capacity => 20, max_reserved => 5);
SELECT rate_limit_define('sw', rate => 10, period => '1 minute', algorithm => 'sliding_window');
SELECT rate_limit_define('sh', rate => 8, period => '1 minute', shards => 4);

-- Short, printable text for names and keys in the output: control and non-ASCII bytes escaped, long
-- ones cut to their first bytes and their length.
CREATE FUNCTION pg_temp.shown(value text) RETURNS text LANGUAGE sql IMMUTABLE AS $$
    SELECT CASE WHEN octet_length(value) <= 20 THEN encode(convert_to(value, 'UTF8'), 'escape')
                ELSE encode(convert_to(left(value, 4), 'UTF8'), 'escape') || '..(' || octet_length(value)
                     || ' bytes)' END
$$;

-- Every row of both tables as one line, for showing what a valid call changed.
CREATE FUNCTION pg_temp.table_lines() RETURNS text[] LANGUAGE sql AS $$
    SELECT array(
        SELECT format('limit %s(%s %s/%s cap %s res %s start %s shards %s %s jitter %s tz %s%s)',
                      pg_temp.shown(name), algorithm, rate, period, capacity, coalesce(max_reserved::text, '-'),
                      coalesce(start::text, '-'), shards, storage, jitter, coalesce(time_zone, '-'),
                      CASE WHEN shadow THEN ' shadow' ELSE '' END)
          FROM rate_limit_config
        UNION ALL
        SELECT format('key %s/%s=%s@%s', pg_temp.shown(limit_name), pg_temp.shown(key), value, ts)
          FROM rate_limit_state
        UNION ALL
        SELECT format('override %s/%s(%s cap %s res %s)', pg_temp.shown(limit_name), pg_temp.shown(key), rate,
                      coalesce(capacity::text, '-'), coalesce(max_reserved::text, '-'))
          FROM rate_limit_override)
$$;

CREATE FUNCTION pg_temp.changes(before text[], after text[]) RETURNS text LANGUAGE sql AS $$
    SELECT string_agg(line, '; ' ORDER BY line) FROM (
        SELECT '-' || l AS line FROM unnest(before) AS l WHERE l <> ALL (after)
        UNION ALL
        SELECT '+' || l FROM unnest(after) AS l WHERE l <> ALL (before)) AS changed
$$;

-- Rows inserted, updated and deleted so far in this transaction, in the three tables (rolled-back
-- savepoints included).
CREATE FUNCTION pg_temp.write_counts() RETURNS bigint[] LANGUAGE sql AS $$
    SELECT ARRAY[pg_stat_get_xact_tuples_inserted(c), pg_stat_get_xact_tuples_updated(c),
                 pg_stat_get_xact_tuples_deleted(c), pg_stat_get_xact_tuples_inserted(s),
                 pg_stat_get_xact_tuples_updated(s), pg_stat_get_xact_tuples_deleted(s),
                 pg_stat_get_xact_tuples_inserted(o), pg_stat_get_xact_tuples_updated(o),
                 pg_stat_get_xact_tuples_deleted(o)]
      FROM (VALUES ('rate_limit_config'::regclass, 'rate_limit_state'::regclass,
                    'rate_limit_override'::regclass)) AS t (c, s, o)
$$;

CREATE FUNCTION pg_temp.writes_between(before bigint[], after bigint[]) RETURNS text LANGUAGE sql AS $$
    SELECT coalesce(string_agg(format('%s %s %s', tbl, after[i] - before[i], what), ', ' ORDER BY i), 'none')
      FROM (VALUES (1, 'config', 'ins'), (2, 'config', 'upd'), (3, 'config', 'del'),
                   (4, 'state', 'ins'), (5, 'state', 'upd'), (6, 'state', 'del'),
                   (7, 'override', 'ins'), (8, 'override', 'upd'), (9, 'override', 'del')) AS w (i, tbl, what)
     WHERE after[i] <> before[i]
$$;

-- Runs one case in a savepoint that is always rolled back: its SQLSTATE and message (and detail) if it
-- fails, else 'ok', its result and what it changed before the rollback; and the rows it wrote either way.
CREATE FUNCTION pg_temp.run_case(statement text, OUT outcome text, OUT detail text, OUT effect text,
                                 OUT writes text) LANGUAGE plpgsql AS $$
DECLARE
    counts_before bigint[] := pg_temp.write_counts();
    lines_before text[] := pg_temp.table_lines();
    result text;
    sqlstate_text text;
    message text;
BEGIN
    BEGIN
        EXECUTE statement INTO result;
        outcome := 'ok' || coalesce(': ' || nullif(result, ''), '');
        effect := pg_temp.changes(lines_before, pg_temp.table_lines());
        RAISE SQLSTATE 'RBACK';  -- undo what the valid call wrote
    EXCEPTION
        WHEN SQLSTATE 'RBACK' THEN NULL;
        WHEN OTHERS THEN
            GET STACKED DIAGNOSTICS sqlstate_text = RETURNED_SQLSTATE, message = MESSAGE_TEXT,
                                    detail = PG_EXCEPTION_DETAIL;
            outcome := sqlstate_text || ': ' || message;
    END;
    writes := pg_temp.writes_between(counts_before, pg_temp.write_counts());
END
$$;

-- Long texts cut for the output, with their full length (a message that repeats a huge input shows).
CREATE FUNCTION pg_temp.cut(value text) RETURNS text LANGUAGE sql IMMUTABLE AS $$
    SELECT CASE WHEN length(value) <= 110 THEN value ELSE left(value, 90) || '..(' || length(value) || ' chars)' END
$$;

-- Byte-for-byte pictures of both tables: each row's text (floats exact, times in UTC), and each row's
-- binary send format with its location and inserting transaction (a row rewritten to the same values
-- would move or change xmin). xmax is left out: a rolled-back write leaves its transaction id there.
CREATE FUNCTION pg_temp.table_pictures() RETURNS TABLE (tbl text, rows bigint, as_text text, as_bytes text)
LANGUAGE sql AS $$
    SELECT 'rate_limit_config', count(*), md5(string_agg(c::text, '|' ORDER BY c.name)),
           md5(string_agg(concat_ws(',', c.ctid, c.xmin, textsend(c.name), textsend(c.algorithm),
                                    float8send(c.rate), interval_send(c.period), float8send(c.capacity),
                                    coalesce(float8send(c.max_reserved)::text, 'null'),
                                    coalesce(timestamptz_send(c.start)::text, 'null'), int4send(c.shards),
                                    textsend(c.storage), int8send(c.epoch), interval_send(c.jitter),
                                    coalesce(textsend(c.time_zone)::text, 'null'), boolsend(c.shadow)), '|'
                          ORDER BY c.name))
      FROM rate_limit_config c
    UNION ALL
    SELECT 'rate_limit_state', count(*),
           md5(string_agg(concat_ws(',', s.limit_name, s.key, s.value::text, s.ts AT TIME ZONE 'UTC'), '|'
                          ORDER BY s.limit_name, s.key)),
           md5(string_agg(concat_ws(',', s.ctid, s.xmin, textsend(s.limit_name), textsend(s.key),
                                    float8send(s.value), timestamptz_send(s.ts)), '|'
                          ORDER BY s.limit_name, s.key))
      FROM rate_limit_state s
    UNION ALL
    SELECT 'rate_limit_override', count(*), md5(string_agg(o::text, '|' ORDER BY o.limit_name, o.key)),
           md5(string_agg(concat_ws(',', o.ctid, o.xmin, textsend(o.limit_name), textsend(o.key),
                                    float8send(o.rate), coalesce(float8send(o.capacity)::text, 'null'),
                                    coalesce(float8send(o.max_reserved)::text, 'null')), '|'
                          ORDER BY o.limit_name, o.key))
      FROM rate_limit_override o
$$;

-- What the limiter would decide for each known key (no limit cache may keep a rolled-back definition).
CREATE FUNCTION pg_temp.decisions() RETURNS text LANGUAGE sql AS $$
    SELECT string_agg(format('%s/%s %s', pg_temp.shown(l), pg_temp.shown(k), rate_limit_check(k, l)), E'\n'
                      ORDER BY l, k)
      FROM unnest(ARRAY['tb', 'fw', repeat('n', 128), 'default']) AS l,
           unnest(ARRAY['half', 'debt', 'used', repeat('k', 1024), 'no_row', 'vip']) AS k
$$;

CREATE TEMP TABLE pictures_before AS SELECT * FROM pg_temp.table_pictures();
CREATE TEMP TABLE decisions_before AS SELECT pg_temp.decisions() AS decisions;
SELECT tbl, rows FROM pictures_before ORDER BY tbl;

-- Values stored in a table: TOAST compresses long compressible texts and moves incompressible ones out
-- of line, and a length check must see through both.
CREATE TEMP TABLE stored (label text, value text);
INSERT INTO stored VALUES ('compressed', repeat('x', 5000)),
                          ('out of line', (SELECT string_agg(md5(i::text), '') FROM generate_series(1, 20000) AS i));
SELECT label, octet_length(value) AS bytes, pg_column_size(value) AS stored_bytes,
       pg_column_compression(value) AS compression
  FROM stored ORDER BY label;
SELECT pg_relation_size(reltoastrelid) > 0 AS some_value_out_of_line FROM pg_class WHERE oid = 'stored'::regclass;

-- The functions' arguments, with the good value each takes while another argument is varied.
CREATE TEMP TABLE arguments (fn text, pos int, arg text, kind text, good text);
INSERT INTO arguments VALUES
    ('rate_limit_request', 1, 'key', 'key', $$'half'$$),
    ('rate_limit_request', 2, 'limit_name', 'name', $$'tb'$$),
    ('rate_limit_request', 3, 'cost', 'float8', '1'),
    ('rate_limit_request', 4, 'reserve', 'boolean', 'false'),
    ('rate_limit_check', 1, 'key', 'key', $$'half'$$),
    ('rate_limit_check', 2, 'limit_name', 'name', $$'tb'$$),
    ('rate_limit_check', 3, 'cost', 'float8', '1'),
    ('rate_limit_throttle', 1, 'key', 'key', $$'half'$$),
    ('rate_limit_throttle', 2, 'limit_name', 'name', $$'tb'$$),
    ('rate_limit_throttle', 3, 'cost', 'float8', '1'),
    ('rate_limit_refund', 1, 'key', 'key', $$'debt'$$),
    ('rate_limit_refund', 2, 'limit_name', 'name', $$'tb'$$),
    ('rate_limit_refund', 3, 'cost', 'float8', '1'),
    ('rate_limit_reset', 1, 'key', 'key', $$'half'$$),
    ('rate_limit_reset', 2, 'limit_name', 'name', $$'tb'$$),
    ('rate_limit_define', 1, 'name', 'name', $$'new_limit'$$),
    ('rate_limit_define', 2, 'rate', 'float8', '10'),
    ('rate_limit_define', 3, 'period', 'interval', $$'1 minute'$$),
    ('rate_limit_define', 4, 'algorithm', 'algorithm', $$'token_bucket'$$),
    ('rate_limit_define', 5, 'capacity', 'float8', 'NULL'),
    ('rate_limit_define', 6, 'max_reserved', 'float8', 'NULL'),
    ('rate_limit_define', 7, 'start', 'timestamptz', 'NULL'),
    ('rate_limit_define', 8, 'shards', 'int4', '1'),
    ('rate_limit_define', 9, 'storage', 'storage', $$'durable'$$),
    ('rate_limit_define', 10, 'jitter', 'interval', 'NULL'),
    ('rate_limit_define', 11, 'rescale', 'rescale', $$'proportional'$$),
    ('rate_limit_define', 12, 'time_zone', 'zone', 'NULL'),
    ('rate_limit_define', 13, 'shadow', 'boolean', 'false'),
    ('rate_limit_drop', 1, 'name', 'name', $$'fw'$$),
    ('rate_limit_cleanup', 1, 'limit_name', 'name', $$'tb'$$),
    ('rate_limit_cleanup', 2, 'max_rows', 'int8', 'NULL'),
    ('rate_limit_override', 1, 'key', 'key', $$'half'$$),
    ('rate_limit_override', 2, 'limit_name', 'name', $$'tb'$$),
    ('rate_limit_override', 3, 'rate', 'float8', '20'),
    ('rate_limit_override', 4, 'capacity', 'float8', 'NULL'),
    ('rate_limit_override', 5, 'max_reserved', 'float8', 'NULL'),
    ('rate_limit_override', 6, 'rescale', 'rescale', $$'proportional'$$),
    ('rate_limit_override_drop', 1, 'key', 'key', $$'vip'$$),
    ('rate_limit_override_drop', 2, 'limit_name', 'name', $$'tb'$$),
    ('rate_limit_policy', 1, 'key', 'key', $$'vip'$$),
    ('rate_limit_policy', 2, 'limit_name', 'name', $$'tb'$$),
    ('rate_limit_stats_reset', 1, 'limit_name', 'name', $$'tb'$$);

-- The values of each kind: a label, the SQL expression, and a FROM clause for values read from a table.
CREATE TEMP TABLE argument_values (kind text, n int, label text, expr text, from_clause text DEFAULT '');
INSERT INTO argument_values (kind, n, label, expr) VALUES
    ('key', 1, 'NULL', 'NULL'),
    ('key', 2, 'empty', $$''$$),
    ('key', 3, 'existing key', $$'half'$$),
    ('key', 4, 'key without a row', $$'no_row'$$),
    ('key', 5, 'trailing space', $$'half '$$),
    ('key', 6, 'control byte \x01', $$E'\x01'$$),
    ('key', 7, 'quotes', $$'it''s "q"'$$),
    ('key', 8, 'backslashes', $$E'\\\\'$$),
    ('key', 9, 'format codes %s%n', $$'%s%n'$$),
    ('key', 10, '1024 bytes (existing)', $$repeat('k', 1024)$$),
    ('key', 11, '1025 bytes', $$repeat('k', 1025)$$),
    ('key', 12, '341 x 3-byte char + x: 1024 bytes', $$repeat(chr(8364), 341) || 'x'$$),
    ('key', 13, '342 x 3-byte char: 1026 bytes', $$repeat(chr(8364), 342)$$),
    ('key', 14, '256 x 4-byte char: 1024 bytes', $$repeat(chr(128512), 256)$$),
    ('key', 15, '257 x 4-byte char: 1028 bytes', $$repeat(chr(128512), 257)$$),
    ('key', 16, '1000000 bytes', $$repeat('k', 1000000)$$),
    ('key', 19, 'invalid UTF-8 literal (PG)', $$E'\xff'$$),
    ('key', 20, 'invalid UTF-8 bytes (PG)', $$convert_from('\xc3'::bytea, 'UTF8')$$),
    ('key', 21, 'UTF-16 surrogate (PG)', $$chr(55296)$$),
    ('name', 1, 'NULL', 'NULL'),
    ('name', 2, 'empty', $$''$$),
    ('name', 3, 'existing tb', $$'tb'$$),
    ('name', 4, 'shipped default', $$'default'$$),
    ('name', 5, 'TB (case differs)', $$'TB'$$),
    ('name', 6, 'trailing space', $$'tb '$$),
    ('name', 7, 'unknown', $$'no_such_limit'$$),
    ('name', 8, 'control byte \x01', $$E'\x01'$$),
    ('name', 9, 'double quotes', $$'"tb"'$$),
    ('name', 10, 'backslash', $$E'\\'$$),
    ('name', 11, 'format codes %s%n', $$'%s%n'$$),
    ('name', 12, '128 bytes (existing)', $$repeat('n', 128)$$),
    ('name', 13, '129 bytes', $$repeat('n', 129)$$),
    ('name', 14, '42 x 3-byte + 2-byte: 128 bytes', $$repeat(chr(8364), 42) || chr(233)$$),
    ('name', 15, '43 x 3-byte char: 129 bytes', $$repeat(chr(8364), 43)$$),
    ('name', 16, '1000000 bytes', $$repeat('n', 1000000)$$),
    ('name', 19, 'invalid UTF-8 literal (PG)', $$E'\xff'$$),
    ('float8', 1, 'NULL', 'NULL'),
    ('float8', 2, 'NaN', $$'NaN'$$),
    ('float8', 3, 'Infinity', $$'Infinity'$$),
    ('float8', 4, '-Infinity', $$'-Infinity'$$),
    ('float8', 5, '-0', $$'-0'::float8$$),
    ('float8', 6, '0', '0'),
    ('float8', 7, '-1', '-1'),
    ('float8', 8, '5e-324 (least double)', $$'5e-324'::float8$$),
    ('float8', 9, '1e-300', $$'1e-300'::float8$$),
    ('float8', 10, '1', '1'),
    ('float8', 11, '10 (= capacity of tb)', '10'),
    ('float8', 12, '10.000000000000002 (next double)', $$'10.000000000000002'::float8$$),
    ('float8', 13, '10.0000000000001', $$'10.0000000000001'::float8$$),
    ('float8', 14, '10.000000000001', $$'10.000000000001'::float8$$),
    ('float8', 15, '1e12', $$'1e12'::float8$$),
    ('float8', 16, '1000000000000.0001 (next double)', $$'1000000000000.0001'::float8$$),
    ('float8', 17, '1e13', $$'1e13'::float8$$),
    ('float8', 18, '1.7976931348623157e308 (max)', $$'1.7976931348623157e308'::float8$$),
    ('interval', 1, 'NULL', 'NULL'),
    ('interval', 2, '0', $$'0'::interval$$),
    ('interval', 3, '-1 minute', $$'-1 minute'::interval$$),
    ('interval', 4, '1 microsecond', $$'1 microsecond'::interval$$),
    ('interval', 5, '1 minute', $$'1 minute'::interval$$),
    ('interval', 6, '1 month', $$'1 month'::interval$$),
    ('interval', 7, '1 year', $$'1 year'::interval$$),
    ('interval', 8, '1 mon -30 days', $$'1 mon -30 days'::interval$$),
    ('interval', 9, '1 day -86400 s (zero)', $$'1 day -86400 seconds'::interval$$),
    ('interval', 10, '1 day -86399.999999 s (1 us)', $$'1 day -86399.999999 seconds'::interval$$),
    ('interval', 11, '36600 days (max)', $$'36600 days'::interval$$),
    ('interval', 12, '36600 days 1 us', $$'36600 days 00:00:00.000001'::interval$$),
    ('interval', 13, '36601 days', $$'36601 days'::interval$$),
    ('interval', 14, '2147483647 days', $$'2147483647 days'::interval$$),
    ('interval', 15, '-2147483648 days', $$'-2147483648 days'::interval$$),
    ('interval', 16, '2562047788 hours', $$'2562047788 hours'::interval$$),
    ('interval', 17, '-2562047788 hours', $$'-2562047788 hours'::interval$$),
    ('interval', 18, '178956970 years', $$'178956970 years'::interval$$),
    ('algorithm', 1, 'NULL', 'NULL'),
    ('algorithm', 2, 'empty', $$''$$),
    ('algorithm', 3, 'token_bucket', $$'token_bucket'$$),
    ('algorithm', 4, 'fixed_window', $$'fixed_window'$$),
    ('algorithm', 12, 'gcra', $$'gcra'$$),
    ('algorithm', 13, 'sliding_window', $$'sliding_window'$$),
    ('algorithm', 5, 'Token_Bucket', $$'Token_Bucket'$$),
    ('algorithm', 6, 'FIXED_WINDOW', $$'FIXED_WINDOW'$$),
    ('algorithm', 7, 'leading space', $$' token_bucket'$$),
    ('algorithm', 8, 'trailing space', $$'token_bucket '$$),
    ('algorithm', 9, 'leaky_bucket', $$'leaky_bucket'$$),
    ('algorithm', 10, 'control byte \x01', $$E'\x01'$$),
    ('algorithm', 11, '1000 bytes', $$repeat('a', 1000)$$),
    ('timestamptz', 1, 'NULL', 'NULL'),
    ('timestamptz', 2, '2026-01-01', $$'2026-01-01 00:00:00+00'::timestamptz$$),
    ('timestamptz', 3, 'epoch', $$'epoch'::timestamptz$$),
    ('timestamptz', 4, 'infinity', $$'infinity'::timestamptz$$),
    ('timestamptz', 5, '-infinity', $$'-infinity'::timestamptz$$),
    ('timestamptz', 6, '4713-01-01 BC (earliest)', $$'4713-01-01 00:00:00+00 BC'::timestamptz$$),
    ('timestamptz', 7, '2000-01-01 + 3660000 days', $$'2000-01-01 00:00:00+00'::timestamptz + '3660000 days'$$),
    ('timestamptz', 8, '... + 1 microsecond', $$'2000-01-01+00'::timestamptz + '3660000 days 00:00:00.000001'$$),
    ('timestamptz', 9, '20000-01-01', $$'20000-01-01 00:00:00+00'::timestamptz$$),
    ('timestamptz', 10, '294276-12-31 (latest)', $$'294276-12-31 23:59:59+00'::timestamptz$$),
    ('int4', 1, 'NULL', 'NULL'),
    ('int4', 2, '0', '0'),
    ('int4', 3, '-1', '-1'),
    ('int4', 4, '1', '1'),
    ('int4', 5, '256 (max)', '256'),
    ('int4', 6, '257', '257'),
    ('int4', 7, '2147483647', '2147483647'),
    ('int8', 1, 'NULL', 'NULL::bigint'),
    ('int8', 2, '0', '0::bigint'),
    ('int8', 3, '-1', '-1::bigint'),
    ('int8', 4, '1', '1::bigint'),
    ('int8', 5, '9223372036854775807', '9223372036854775807'),
    ('int8', 6, '-9223372036854775808', '-9223372036854775808'),
    ('storage', 1, 'NULL', 'NULL'),
    ('storage', 2, 'durable', $$'durable'$$),
    ('storage', 3, 'unlogged', $$'unlogged'$$),
    ('storage', 4, 'memory', $$'memory'$$),
    ('storage', 5, 'Memory', $$'Memory'$$),
    ('storage', 6, 'tape', $$'tape'$$),
    ('zone', 1, 'NULL', 'NULL'),
    ('zone', 2, 'UTC', $$'UTC'$$),
    ('zone', 3, 'europe/paris', $$'europe/paris'$$),
    ('zone', 4, 'empty', $$''$$),
    ('zone', 5, 'Mars/Olympus_Mons', $$'Mars/Olympus_Mons'$$),
    ('zone', 6, 'right/UTC (leap seconds)', $$'right/UTC'$$),
    ('zone', 7, '../../etc/passwd', $$'../../etc/passwd'$$),
    ('zone', 8, '1000 bytes', $$repeat('z', 1000)$$),
    ('zone', 9, 'control byte', $$E'UTC\x01'$$),
    ('rescale', 1, 'NULL', 'NULL'),
    ('rescale', 2, 'proportional', $$'proportional'$$),
    ('rescale', 3, 'as_is', $$'as_is'$$),
    ('rescale', 4, 'reset', $$'reset'$$),
    ('rescale', 5, 'Reset', $$'Reset'$$),
    ('rescale', 6, 'keep', $$'keep'$$),
    ('boolean', 1, 'NULL', 'NULL'),
    ('boolean', 2, 'false', 'false'),
    ('boolean', 3, 'true', 'true');
INSERT INTO argument_values VALUES
    ('key', 17, 'compressed in a table: 5000 bytes', 'v.value', $$ FROM stored v WHERE v.label = 'compressed'$$),
    ('key', 18, 'out of line in a table: 640000 bytes', 'v.value', $$ FROM stored v WHERE v.label = 'out of line'$$),
    ('name', 17, 'compressed in a table: 5000 bytes', 'v.value', $$ FROM stored v WHERE v.label = 'compressed'$$),
    ('name', 18, 'out of line in a table: 640000 bytes', 'v.value', $$ FROM stored v WHERE v.label = 'out of line'$$);

-- The cases: each argument of each function crossed with the values of its kind, the other arguments
-- good. Two exceptions keep a case meaningful: start is varied on a fixed window (on a token bucket any
-- start is refused, see the extra cases), and reserve on the key in debt (on a key with enough units it
-- changes nothing).
CREATE TEMP TABLE cases (id serial, fn text, arg text, label text, statement text);
INSERT INTO cases (fn, arg, label, statement)
SELECT a.fn, a.arg, v.label,
       format('SELECT %s(%s)::text%s', a.fn,
              (SELECT string_agg(CASE WHEN o.pos = a.pos THEN v.expr
                                      WHEN a.arg = 'start' AND o.arg = 'algorithm' THEN $$'fixed_window'$$
                                      WHEN a.arg = 'reserve' AND o.arg = 'key' THEN $$'debt'$$
                                      ELSE o.good END, ', ' ORDER BY o.pos)
                 FROM arguments o WHERE o.fn = a.fn),
              v.from_clause)
  FROM arguments a JOIN argument_values v ON v.kind = a.kind
 ORDER BY array_position(ARRAY['rate_limit_request', 'rate_limit_check', 'rate_limit_throttle', 'rate_limit_refund',
                               'rate_limit_reset',
                               'rate_limit_define', 'rate_limit_drop', 'rate_limit_cleanup',
                               'rate_limit_override', 'rate_limit_override_drop', 'rate_limit_policy',
                               'rate_limit_stats_reset'], a.fn),
          a.pos, v.n;

-- Extra cases: every argument NULL, and calls whose meaning depends on two arguments together.
INSERT INTO cases (fn, arg, label, statement) VALUES
    ('rate_limit_request', '(all)', 'all NULL', 'SELECT rate_limit_request(NULL, NULL, NULL, NULL)::text'),
    ('rate_limit_check', '(all)', 'all NULL', 'SELECT rate_limit_check(NULL, NULL, NULL)::text'),
    ('rate_limit_throttle', '(all)', 'all NULL', 'SELECT rate_limit_throttle(NULL, NULL, NULL)::text'),
    ('rate_limit_throttle', 'cost', '11 on tb (capacity 10)', $$SELECT rate_limit_throttle('half', 'tb', 11)::text$$),
    ('rate_limit_refund', '(all)', 'all NULL', 'SELECT rate_limit_refund(NULL, NULL, NULL)::text'),
    ('rate_limit_reset', '(all)', 'all NULL', 'SELECT rate_limit_reset(NULL, NULL)::text'),
    ('rate_limit_define', '(all)', 'all NULL',
     'SELECT rate_limit_define(NULL, NULL, NULL, NULL, NULL, NULL, NULL)::text'),
    ('rate_limit_drop', '(all)', 'all NULL', 'SELECT rate_limit_drop(NULL)::text'),
    ('rate_limit_cleanup', '(all)', 'all NULL (all limits)', 'SELECT rate_limit_cleanup(NULL, NULL)::text'),
    ('rate_limit_override', '(all)', 'all NULL',
     'SELECT rate_limit_override(NULL, NULL, NULL, NULL, NULL, NULL)::text'),
    ('rate_limit_override_drop', '(all)', 'all NULL', 'SELECT rate_limit_override_drop(NULL, NULL)::text'),
    ('rate_limit_policy', '(all)', 'all NULL', 'SELECT rate_limit_policy(NULL, NULL)::text'),
    ('rate_limit_stats_reset', '(all)', 'all NULL (an error, never every limit)', 'SELECT rate_limit_stats_reset(NULL)::text'),
    ('rate_limit_override', 'rate', '1e12 (capacity scaled alike)', $$SELECT rate_limit_override('half', 'tb', 1e12)::text$$),
    ('rate_limit_override', 'capacity', '30 on a sliding window', $$SELECT rate_limit_override('k', 'sw', 20, 30)::text$$),
    ('rate_limit_override', 'max_reserved', '1 on a sliding window', $$SELECT rate_limit_override('k', 'sw', 20, NULL, 1)::text$$),
    ('rate_limit_override', 'rate', '20 on a sliding window (capacity follows)', $$SELECT rate_limit_override('k', 'sw', 20)::text$$),
    ('rate_limit_override', 'rate', '1e-9 on 4 shards', $$SELECT rate_limit_override('k', 'sh', 1e-9)::text$$),
    ('rate_limit_override_drop', 'key', 'key without an override', $$SELECT rate_limit_override_drop('half', 'tb')::text$$),
    ('rate_limit_request', 'cost+reserve', '9 reserved beyond max_reserved',
     $$SELECT rate_limit_request('debt', 'tb', 9, true)::text$$),
    ('rate_limit_request', 'cost+reserve', '2 reserved within max_reserved',
     $$SELECT rate_limit_request('debt', 'tb', 2, true)::text$$),
    ('rate_limit_request', 'cost', '4 on fw (capacity 5, 3 left)', $$SELECT rate_limit_request('used', 'fw', 4)::text$$),
    ('rate_limit_request', 'cost', '10.0000000000001 on a full key',
     $$SELECT rate_limit_request('no_row', 'tb', 10.0000000000001)::text$$),
    ('rate_limit_refund', 'cost', '10 on the key in debt', $$SELECT rate_limit_refund('debt', 'tb', 10)::text$$),
    ('rate_limit_define', 'start', 'on a token bucket',
     $$SELECT rate_limit_define('new_limit', 10, '1 minute', 'token_bucket', NULL, NULL, '2026-01-01+00')::text$$),
    ('rate_limit_define', 'start', 'on gcra',
     $$SELECT rate_limit_define('new_limit', 10, '1 minute', 'gcra', NULL, NULL, '2026-01-01+00')::text$$),
    ('rate_limit_define', 'start', 'on a sliding window',
     $$SELECT rate_limit_define('new_limit', 10, '1 minute', 'sliding_window', NULL, NULL, '2026-01-01+00')::text$$),
    ('rate_limit_define', 'capacity', 'sliding window, capacity 20 for rate 10',
     $$SELECT rate_limit_define('new_limit', 10, '1 minute', 'sliding_window', 20)::text$$),
    ('rate_limit_define', 'capacity', 'sliding window, capacity = rate',
     $$SELECT rate_limit_define('new_limit', 10, '1 minute', 'sliding_window', 10)::text$$),
    ('rate_limit_define', 'max_reserved', 'sliding window, 1 reservable',
     $$SELECT rate_limit_define('new_limit', 10, '1 minute', 'sliding_window', NULL, 1)::text$$),
    ('rate_limit_define', 'max_reserved', 'sliding window, 0 reservable',
     $$SELECT rate_limit_define('new_limit', 10, '1 minute', 'sliding_window', NULL, 0)::text$$),
    ('rate_limit_define', 'period', 'sliding window, 999 microseconds',
     $$SELECT rate_limit_define('new_limit', 10, '999 microseconds', 'sliding_window')::text$$),
    ('rate_limit_define', 'period', 'sliding window, 1 millisecond',
     $$SELECT rate_limit_define('new_limit', 10, '1 millisecond', 'sliding_window')::text$$),
    ('rate_limit_define', 'jitter', '1 day (max)',
     $$SELECT rate_limit_define('new_limit', 10, '1 minute', jitter => '1 day')::text$$),
    ('rate_limit_define', 'jitter', '1 day 1 us',
     $$SELECT rate_limit_define('new_limit', 10, '1 minute', jitter => '1 day 00:00:00.000001')::text$$),
    ('rate_limit_define', 'time_zone', 'fixed window, 1 month in Europe/Paris',
     $$SELECT rate_limit_define('new_limit', 10, '1 month', 'fixed_window', time_zone => 'europe/paris')::text$$),
    ('rate_limit_define', 'time_zone', 'fixed window, 1 month, no zone (UTC)',
     $$SELECT rate_limit_define('new_limit', 10, '1 month', 'fixed_window')::text$$),
    ('rate_limit_define', 'time_zone', 'fixed window, 2 weeks in UTC',
     $$SELECT rate_limit_define('new_limit', 10, '2 weeks', 'fixed_window', time_zone => 'UTC')::text$$),
    ('rate_limit_define', 'time_zone', 'fixed window, 1 day 1 hour in UTC',
     $$SELECT rate_limit_define('new_limit', 10, '1 day 1 hour', 'fixed_window', time_zone => 'UTC')::text$$),
    ('rate_limit_define', 'time_zone', 'fixed window, 1200 months (max)',
     $$SELECT rate_limit_define('new_limit', 10, '1200 months', 'fixed_window')::text$$),
    ('rate_limit_define', 'time_zone', 'fixed window, 1201 months',
     $$SELECT rate_limit_define('new_limit', 10, '1201 months', 'fixed_window')::text$$),
    ('rate_limit_define', 'time_zone', 'fw: a start and a zone',
     $$SELECT rate_limit_define('fw', 5, '1 day', 'fixed_window', start => '2026-01-01', time_zone => 'UTC')::text$$),
    ('rate_limit_define', 'capacity', 'below the cost already held',
     $$SELECT rate_limit_define('tb', 10, '1 minute', 'token_bucket', 1, 5, NULL)::text$$),
    ('rate_limit_define', 'algorithm', 'tb becomes a fixed window',
     $$SELECT rate_limit_define('tb', 10, '1 minute', 'fixed_window', NULL, 5, NULL)::text$$),
    ('rate_limit_define', 'name', 'default redefined',
     $$SELECT rate_limit_define('default', 1, '1 second')::text$$),
    ('rate_limit_config_changed', '(none)', 'the trigger function called directly',
     'SELECT rate_limit_config_changed()::text'),
    ('rate_limit_config_row', '(none)', 'the trigger function called directly',
     'SELECT rate_limit_config_row()::text');

-- rate_limit_enforce and rate_limit_settle, crossed the same way (numbered after the others).
-- settle's amounts are 0 or units; the key in debt takes both ways of settling.
INSERT INTO arguments VALUES
    ('rate_limit_enforce', 1, 'key', 'key', $$'half'$$),
    ('rate_limit_enforce', 2, 'limit_name', 'name', $$'tb'$$),
    ('rate_limit_enforce', 3, 'cost', 'float8', '1'),
    ('rate_limit_settle', 1, 'key', 'key', $$'debt'$$),
    ('rate_limit_settle', 2, 'limit_name', 'name', $$'tb'$$),
    ('rate_limit_settle', 3, 'reserved', 'float8', '3'),
    ('rate_limit_settle', 4, 'actual', 'float8', '2');
INSERT INTO cases (fn, arg, label, statement)
SELECT a.fn, a.arg, v.label,
       format('SELECT %s(%s)::text%s', a.fn,
              (SELECT string_agg(CASE WHEN o.pos = a.pos THEN v.expr ELSE o.good END, ', ' ORDER BY o.pos)
                 FROM arguments o WHERE o.fn = a.fn),
              v.from_clause)
  FROM arguments a JOIN argument_values v ON v.kind = a.kind
 WHERE a.fn IN ('rate_limit_enforce', 'rate_limit_settle')
 ORDER BY a.fn, a.pos, v.n;
INSERT INTO cases (fn, arg, label, statement) VALUES
    ('rate_limit_enforce', '(all)', 'all NULL', 'SELECT rate_limit_enforce(NULL, NULL, NULL)::text'),
    ('rate_limit_enforce', 'cost', '6 on half (5 left): RL001',
     $$SELECT rate_limit_enforce('half', 'tb', 6)::text$$),
    ('rate_limit_enforce', 'cost', '11 on tb (capacity 10)', $$SELECT rate_limit_enforce('half', 'tb', 11)::text$$),
    ('rate_limit_settle', '(all)', 'all NULL', 'SELECT rate_limit_settle(NULL, NULL, NULL, NULL)::text'),
    ('rate_limit_settle', 'reserved', '10 on tb (capacity 10)', $$SELECT rate_limit_settle('debt', 'tb', 10, 2)::text$$),
    ('rate_limit_settle', 'reserved', '10.0000000000001 (capacity 10)',
     $$SELECT rate_limit_settle('debt', 'tb', 10.0000000000001, 2)::text$$),
    ('rate_limit_settle', 'actual', '1e12 on the key in debt',
     $$SELECT rate_limit_settle('debt', 'tb', 3, 1e12)::text$$),
    ('rate_limit_settle', 'actual', 'equal to reserved', $$SELECT rate_limit_settle('debt', 'tb', 3, 3)::text$$),
    ('rate_limit_settle', 'actual', 'both 0', $$SELECT rate_limit_settle('debt', 'tb', 0, 0)::text$$);

-- rate_limit_request_all: its three arrays, their lengths, their elements (each element is checked, and
-- each cost against its key's own limit, before anything is decided).
INSERT INTO cases (fn, arg, label, statement) VALUES
    ('rate_limit_request_all', '(all)', 'all NULL',
     $$SELECT string_agg(format('%s:%s,%s,%s', r.position, r.allowed, r.remaining, r.retry_after), ' ' ORDER BY r.position) FROM rate_limit_request_all(NULL, NULL, NULL) AS r$$),
    ('rate_limit_request_all', 'keys', 'NULL',
     $$SELECT string_agg(format('%s:%s,%s,%s', r.position, r.allowed, r.remaining, r.retry_after), ' ' ORDER BY r.position) FROM rate_limit_request_all(NULL, ARRAY['tb', 'fw']) AS r$$),
    ('rate_limit_request_all', 'keys', 'empty (and limit_names empty)',
     $$SELECT string_agg(format('%s:%s,%s,%s', r.position, r.allowed, r.remaining, r.retry_after), ' ' ORDER BY r.position) FROM rate_limit_request_all(ARRAY[]::text[], ARRAY[]::text[]) AS r$$),
    ('rate_limit_request_all', 'keys', 'one more than limit_names',
     $$SELECT string_agg(format('%s:%s,%s,%s', r.position, r.allowed, r.remaining, r.retry_after), ' ' ORDER BY r.position) FROM rate_limit_request_all(ARRAY['half', 'half', 'half'], ARRAY['tb', 'fw']) AS r$$),
    ('rate_limit_request_all', 'keys', 'two-dimensional',
     $$SELECT string_agg(format('%s:%s,%s,%s', r.position, r.allowed, r.remaining, r.retry_after), ' ' ORDER BY r.position) FROM rate_limit_request_all(ARRAY[['half', 'half']], ARRAY['tb', 'fw']) AS r$$),
    ('rate_limit_request_all', 'keys', 'a NULL element',
     $$SELECT string_agg(format('%s:%s,%s,%s', r.position, r.allowed, r.remaining, r.retry_after), ' ' ORDER BY r.position) FROM rate_limit_request_all(ARRAY['half', NULL], ARRAY['tb', 'fw']) AS r$$),
    ('rate_limit_request_all', 'keys', 'an empty element',
     $$SELECT string_agg(format('%s:%s,%s,%s', r.position, r.allowed, r.remaining, r.retry_after), ' ' ORDER BY r.position) FROM rate_limit_request_all(ARRAY['half', ''], ARRAY['tb', 'fw']) AS r$$),
    ('rate_limit_request_all', 'keys', 'a 1024-byte element',
     $$SELECT string_agg(format('%s:%s,%s,%s', r.position, r.allowed, r.remaining, r.retry_after), ' ' ORDER BY r.position) FROM rate_limit_request_all(ARRAY['half', repeat('k', 1024)], ARRAY['tb', 'fw']) AS r$$),
    ('rate_limit_request_all', 'keys', 'a 1025-byte element',
     $$SELECT string_agg(format('%s:%s,%s,%s', r.position, r.allowed, r.remaining, r.retry_after), ' ' ORDER BY r.position) FROM rate_limit_request_all(ARRAY['half', repeat('k', 1025)], ARRAY['tb', 'fw']) AS r$$),
    ('rate_limit_request_all', 'keys', 'a (key, limit) twice: decided in turn',
     $$SELECT string_agg(format('%s:%s,%s,%s', r.position, r.allowed, r.remaining, r.retry_after), ' ' ORDER BY r.position) FROM rate_limit_request_all(ARRAY['half', 'half'], ARRAY['tb', 'tb'], ARRAY[3, 3]) AS r$$),
    ('rate_limit_request_all', 'limit_names', 'NULL',
     $$SELECT string_agg(format('%s:%s,%s,%s', r.position, r.allowed, r.remaining, r.retry_after), ' ' ORDER BY r.position) FROM rate_limit_request_all(ARRAY['half', 'half'], NULL) AS r$$),
    ('rate_limit_request_all', 'limit_names', 'one fewer than keys',
     $$SELECT string_agg(format('%s:%s,%s,%s', r.position, r.allowed, r.remaining, r.retry_after), ' ' ORDER BY r.position) FROM rate_limit_request_all(ARRAY['half', 'half'], ARRAY['tb']) AS r$$),
    ('rate_limit_request_all', 'limit_names', 'a NULL element',
     $$SELECT string_agg(format('%s:%s,%s,%s', r.position, r.allowed, r.remaining, r.retry_after), ' ' ORDER BY r.position) FROM rate_limit_request_all(ARRAY['half', 'half'], ARRAY['tb', NULL]) AS r$$),
    ('rate_limit_request_all', 'limit_names', 'an empty element',
     $$SELECT string_agg(format('%s:%s,%s,%s', r.position, r.allowed, r.remaining, r.retry_after), ' ' ORDER BY r.position) FROM rate_limit_request_all(ARRAY['half', 'half'], ARRAY['tb', '']) AS r$$),
    ('rate_limit_request_all', 'limit_names', 'an unknown limit',
     $$SELECT string_agg(format('%s:%s,%s,%s', r.position, r.allowed, r.remaining, r.retry_after), ' ' ORDER BY r.position) FROM rate_limit_request_all(ARRAY['half', 'half'], ARRAY['tb', 'no_such_limit']) AS r$$),
    ('rate_limit_request_all', 'limit_names', 'a 128-byte name (existing)',
     $$SELECT string_agg(format('%s:%s,%s,%s', r.position, r.allowed, r.remaining, r.retry_after), ' ' ORDER BY r.position) FROM rate_limit_request_all(ARRAY['half', 'half'], ARRAY['tb', repeat('n', 128)]) AS r$$),
    ('rate_limit_request_all', 'limit_names', 'a 129-byte name',
     $$SELECT string_agg(format('%s:%s,%s,%s', r.position, r.allowed, r.remaining, r.retry_after), ' ' ORDER BY r.position) FROM rate_limit_request_all(ARRAY['half', 'half'], ARRAY['tb', repeat('n', 129)]) AS r$$),
    ('rate_limit_request_all', 'limit_names', 'two-dimensional',
     $$SELECT string_agg(format('%s:%s,%s,%s', r.position, r.allowed, r.remaining, r.retry_after), ' ' ORDER BY r.position) FROM rate_limit_request_all(ARRAY['half', 'half'], ARRAY[['tb', 'fw']]) AS r$$),
    ('rate_limit_request_all', 'costs', 'NULL (all 1)',
     $$SELECT string_agg(format('%s:%s,%s,%s', r.position, r.allowed, r.remaining, r.retry_after), ' ' ORDER BY r.position) FROM rate_limit_request_all(ARRAY['half', 'half'], ARRAY['tb', 'fw'], NULL) AS r$$),
    ('rate_limit_request_all', 'costs', 'a NULL element (1)',
     $$SELECT string_agg(format('%s:%s,%s,%s', r.position, r.allowed, r.remaining, r.retry_after), ' ' ORDER BY r.position) FROM rate_limit_request_all(ARRAY['half', 'half'], ARRAY['tb', 'fw'], ARRAY[NULL, 2]) AS r$$),
    ('rate_limit_request_all', 'costs', 'one more than keys',
     $$SELECT string_agg(format('%s:%s,%s,%s', r.position, r.allowed, r.remaining, r.retry_after), ' ' ORDER BY r.position) FROM rate_limit_request_all(ARRAY['half', 'half'], ARRAY['tb', 'fw'], ARRAY[1, 1, 1]) AS r$$),
    ('rate_limit_request_all', 'costs', 'two-dimensional',
     $$SELECT string_agg(format('%s:%s,%s,%s', r.position, r.allowed, r.remaining, r.retry_after), ' ' ORDER BY r.position) FROM rate_limit_request_all(ARRAY['half', 'half'], ARRAY['tb', 'fw'], ARRAY[[1, 1]]) AS r$$),
    ('rate_limit_request_all', 'costs', 'NaN',
     $$SELECT string_agg(format('%s:%s,%s,%s', r.position, r.allowed, r.remaining, r.retry_after), ' ' ORDER BY r.position) FROM rate_limit_request_all(ARRAY['half', 'half'], ARRAY['tb', 'fw'], ARRAY[1, 'NaN'::float8]) AS r$$),
    ('rate_limit_request_all', 'costs', 'Infinity',
     $$SELECT string_agg(format('%s:%s,%s,%s', r.position, r.allowed, r.remaining, r.retry_after), ' ' ORDER BY r.position) FROM rate_limit_request_all(ARRAY['half', 'half'], ARRAY['tb', 'fw'], ARRAY[1, 'Infinity'::float8]) AS r$$),
    ('rate_limit_request_all', 'costs', '-Infinity',
     $$SELECT string_agg(format('%s:%s,%s,%s', r.position, r.allowed, r.remaining, r.retry_after), ' ' ORDER BY r.position) FROM rate_limit_request_all(ARRAY['half', 'half'], ARRAY['tb', 'fw'], ARRAY[1, '-Infinity'::float8]) AS r$$),
    ('rate_limit_request_all', 'costs', 'negative',
     $$SELECT string_agg(format('%s:%s,%s,%s', r.position, r.allowed, r.remaining, r.retry_after), ' ' ORDER BY r.position) FROM rate_limit_request_all(ARRAY['half', 'half'], ARRAY['tb', 'fw'], ARRAY[1, -1]) AS r$$),
    ('rate_limit_request_all', 'costs', 'zero',
     $$SELECT string_agg(format('%s:%s,%s,%s', r.position, r.allowed, r.remaining, r.retry_after), ' ' ORDER BY r.position) FROM rate_limit_request_all(ARRAY['half', 'half'], ARRAY['tb', 'fw'], ARRAY[1, 0]) AS r$$),
    ('rate_limit_request_all', 'costs', '-0',
     $$SELECT string_agg(format('%s:%s,%s,%s', r.position, r.allowed, r.remaining, r.retry_after), ' ' ORDER BY r.position) FROM rate_limit_request_all(ARRAY['half', 'half'], ARRAY['tb', 'fw'], ARRAY[1, '-0'::float8]) AS r$$),
    ('rate_limit_request_all', 'costs', '1e-10',
     $$SELECT string_agg(format('%s:%s,%s,%s', r.position, r.allowed, r.remaining, r.retry_after), ' ' ORDER BY r.position) FROM rate_limit_request_all(ARRAY['half', 'half'], ARRAY['tb', 'fw'], ARRAY[1, 1e-10]) AS r$$),
    ('rate_limit_request_all', 'costs', '1e12 + 1',
     $$SELECT string_agg(format('%s:%s,%s,%s', r.position, r.allowed, r.remaining, r.retry_after), ' ' ORDER BY r.position) FROM rate_limit_request_all(ARRAY['half', 'half'], ARRAY['tb', 'fw'], ARRAY[1, 1000000000001]) AS r$$),
    ('rate_limit_request_all', 'costs', '11 on tb (capacity 10)',
     $$SELECT string_agg(format('%s:%s,%s,%s', r.position, r.allowed, r.remaining, r.retry_after), ' ' ORDER BY r.position) FROM rate_limit_request_all(ARRAY['half', 'half'], ARRAY['fw', 'tb'], ARRAY[1, 11]) AS r$$),
    ('rate_limit_request_all', 'costs', '3 on sh (a shard holds 2)',
     $$SELECT string_agg(format('%s:%s,%s,%s', r.position, r.allowed, r.remaining, r.retry_after), ' ' ORDER BY r.position) FROM rate_limit_request_all(ARRAY['half', 'half'], ARRAY['fw', 'sh'], ARRAY[1, 3]) AS r$$),
    ('rate_limit_request_all', 'costs', '20 on tb for vip (its capacity: 20)',
     $$SELECT string_agg(format('%s:%s,%s,%s', r.position, r.allowed, r.remaining, r.retry_after), ' ' ORDER BY r.position) FROM rate_limit_request_all(ARRAY['half', 'vip'], ARRAY['fw', 'tb'], ARRAY[1, 20]) AS r$$),
    ('rate_limit_request_all', 'costs', '21 on tb for vip (its capacity: 20)',
     $$SELECT string_agg(format('%s:%s,%s,%s', r.position, r.allowed, r.remaining, r.retry_after), ' ' ORDER BY r.position) FROM rate_limit_request_all(ARRAY['half', 'vip'], ARRAY['fw', 'tb'], ARRAY[1, 21]) AS r$$),
    ('rate_limit_request_all', 'costs', '6 on half (5 left): denied, nothing kept',
     $$SELECT string_agg(format('%s:%s,%s,%s', r.position, r.allowed, r.remaining, r.retry_after), ' ' ORDER BY r.position) FROM rate_limit_request_all(ARRAY['half', 'half'], ARRAY['fw', 'tb'], ARRAY[1, 6]) AS r$$);

-- The harness itself: a call that writes and then fails must show its write (it is not counted as a case).
CREATE FUNCTION pg_temp.write_then_fail() RETURNS text LANGUAGE plpgsql AS $$
BEGIN
    PERFORM rate_limit_request('half', 'tb');
    RAISE division_by_zero;
END
$$;
SELECT * FROM pg_temp.run_case('SELECT pg_temp.write_then_fail()');

SELECT c.id, c.fn, c.arg, c.label, pg_temp.cut(r.outcome) AS outcome, pg_temp.cut(r.detail) AS detail, r.effect,
       r.writes
  INTO TEMP results
  FROM cases c, pg_temp.run_case(c.statement) AS r
 ORDER BY c.id;

SELECT id, fn, arg, label, outcome, detail, effect, writes FROM results ORDER BY id;

-- Valid extremes in use: a limit with the smallest or largest rate, period, capacity, reservation or
-- start is defined and then requested from, refunded and checked (rolled back like every case).
CREATE FUNCTION pg_temp.use_limit(rate float8, period interval, algorithm text, capacity float8,
                                  max_reserved float8, start timestamptz, key text, costs float8[],
                                  reserve boolean) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
    cost float8;
    steps text[] := '{}';
BEGIN
    PERFORM rate_limit_define('extreme', rate, period, algorithm, capacity, max_reserved, start);
    FOREACH cost IN ARRAY costs LOOP
        steps := steps || rate_limit_request(key, 'extreme', cost, reserve)::text;
    END LOOP;
    steps := steps || ('refund ' || rate_limit_refund(key, 'extreme', costs[1])::text);
    steps := steps || ('check ' || rate_limit_check(key, 'extreme', costs[1])::text);
    RETURN array_to_string(steps, ' ');
END
$$;

CREATE TEMP TABLE extreme_cases (id serial, label text, statement text);
INSERT INTO extreme_cases (label, statement) VALUES
    ('rate 1e-9 (the least) per second, capacity = rate',
     $$SELECT pg_temp.use_limit(1e-9, '1 second', 'token_bucket', NULL, NULL, NULL, 'k', '{1e-9,1e-9}', false)$$),
    ('rate 1e-9 per 36600 days, capacity 1e12',
     $$SELECT pg_temp.use_limit(1e-9, '36600 days', 'token_bucket', 1e12, NULL, NULL, 'k', '{1e12,1}', false)$$),
    ('rate 1e-9 per microsecond, capacity 1e12',
     $$SELECT pg_temp.use_limit(1e-9, '1 microsecond', 'token_bucket', 1e12, NULL, NULL, 'k', '{1e12,1}', false)$$),
    ('rate 1e12 per microsecond',
     $$SELECT pg_temp.use_limit(1e12, '1 microsecond', 'token_bucket', NULL, NULL, NULL, 'k', '{1e12,1e12,1}', false)$$),
    ('capacity 1e-9, rate 1e12 per 36600 days',
     $$SELECT pg_temp.use_limit(1e12, '36600 days', 'token_bucket', 1e-9, NULL, NULL, 'k', '{1e-9,1e-9}', false)$$),
    ('max_reserved 1e12, reserve 1e12 twice',
     $$SELECT pg_temp.use_limit(1, '36600 days', 'token_bucket', 1e12, 1e12, NULL, 'k', '{1e12,1e12,1e12}', true)$$),
    ('max_reserved unlimited (Infinity), reserve 1e12 x3',
     $$SELECT pg_temp.use_limit(1e-9, '36600 days', 'token_bucket', 1e12, 'Infinity', NULL, 'k',
                                '{1e12,1e12,1e12}', true)$$),
    ('max_reserved -0, reserve',
     $$SELECT pg_temp.use_limit(1, '1 second', 'token_bucket', 1, '-0', NULL, 'k', '{1,1}', true)$$),
    ('fixed window, 1 us windows from 4713 BC',
     $$SELECT pg_temp.use_limit(1e12, '1 microsecond', 'fixed_window', NULL, NULL, '4713-01-01 00:00:00+00 BC', 'k',
                                '{1e12,1e12}', false)$$),
    ('fixed window, 36600-day windows from 2000 + 3660000 days',
     $$SELECT pg_temp.use_limit(1, '36600 days', 'fixed_window', NULL, NULL,
                                '2000-01-01+00'::timestamptz + '3660000 days', 'k', '{1,1}', false)$$),
    ('fixed window, keyed 36600-day windows, 1024-byte key',
     $$SELECT pg_temp.use_limit(1e-9, '36600 days', 'fixed_window', 1e12, NULL, NULL, repeat('k', 1024),
                                '{1e12,1}', false)$$),
    ('fixed window, rollover capacity 1e12, rate 1e-9',
     $$SELECT pg_temp.use_limit(1e-9, '1 microsecond', 'fixed_window', 1e12, 1e12, NULL, 'k', '{1e12,1e12}',
                                true)$$);

SELECT e.id, e.label, r.outcome, r.writes
  INTO TEMP extreme_results
  FROM extreme_cases e, pg_temp.run_case(e.statement) AS r
 ORDER BY e.id;
SELECT id, label, outcome, writes FROM extreme_results ORDER BY id;

-- NULL for an optional argument means its default: each pair of calls, one with NULL and one without the
-- argument, gives the same result and leaves the same rows.
CREATE TEMP TABLE null_pairs (fn text, arg text, with_null text, omitted text);
INSERT INTO null_pairs VALUES
    ('rate_limit_request', 'cost', $$SELECT rate_limit_request('half', 'tb', NULL)::text$$,
     $$SELECT rate_limit_request('half', 'tb')::text$$),
    ('rate_limit_request', 'reserve', $$SELECT rate_limit_request('debt', 'tb', 1, NULL)::text$$,
     $$SELECT rate_limit_request('debt', 'tb', 1)::text$$),
    ('rate_limit_check', 'cost', $$SELECT rate_limit_check('half', 'tb', NULL)::text$$,
     $$SELECT rate_limit_check('half', 'tb')::text$$),
    ('rate_limit_refund', 'cost', $$SELECT rate_limit_refund('debt', 'tb', NULL)::text$$,
     $$SELECT rate_limit_refund('debt', 'tb')::text$$),
    ('rate_limit_define', 'capacity', $$SELECT rate_limit_define('tb', 7, '1 minute', 'token_bucket', NULL)::text$$,
     $$SELECT rate_limit_define('tb', 7, '1 minute', 'token_bucket')::text$$),
    ('rate_limit_define', 'max_reserved',
     $$SELECT rate_limit_define('tb', 10, '1 minute', 'token_bucket', 10, NULL)::text$$,
     $$SELECT rate_limit_define('tb', 10, '1 minute', 'token_bucket', 10)::text$$),
    ('rate_limit_define', 'start',
     $$SELECT rate_limit_define('fw', 5, '1 hour', 'fixed_window', NULL, NULL, NULL)::text$$,
     $$SELECT rate_limit_define('fw', 5, '1 hour', 'fixed_window')::text$$),
    ('rate_limit_cleanup', 'limit_name', $$SELECT rate_limit_cleanup(NULL)::text$$,
     $$SELECT rate_limit_cleanup()::text$$),
    ('rate_limit_stats_reset', 'limit_name', $$SELECT rate_limit_stats_reset(NULL)::text$$,
     $$SELECT rate_limit_stats_reset()::text$$),
    ('rate_limit_cleanup', 'max_rows', $$SELECT rate_limit_cleanup('tb', NULL)::text$$,
     $$SELECT rate_limit_cleanup('tb')::text$$);
SELECT p.fn, p.arg, n.outcome AS with_null, n.effect AS effect_with_null,
       (n.outcome, n.effect, n.writes) IS NOT DISTINCT FROM (o.outcome, o.effect, o.writes) AS same_as_omitted
  FROM null_pairs p, pg_temp.run_case(p.with_null) AS n, pg_temp.run_case(p.omitted) AS o
 ORDER BY p.fn, p.arg;

-- The count, by function and in all.
SELECT fn, count(*) AS cases, count(*) FILTER (WHERE outcome NOT LIKE 'ok%') AS errors,
       count(*) FILTER (WHERE outcome LIKE 'ok%') AS ok
  FROM results GROUP BY ROLLUP (fn)
 ORDER BY fn IS NULL, array_position(ARRAY['rate_limit_request', 'rate_limit_check', 'rate_limit_refund',
                                           'rate_limit_reset', 'rate_limit_define', 'rate_limit_drop',
                                           'rate_limit_cleanup', 'rate_limit_override',
                                           'rate_limit_override_drop', 'rate_limit_policy',
                                           'rate_limit_stats_reset', 'rate_limit_config_changed',
                                           'rate_limit_config_row'], fn), fn;
SELECT count(*) AS extreme_cases, count(*) FILTER (WHERE outcome LIKE 'ok%') AS ok FROM extreme_results;
-- Errors by SQLSTATE (22021, 22007, 54000 and 0A000 are PostgreSQL's own, raised before the function runs).
SELECT left(outcome, 5) AS sqlstate, count(*) FROM results WHERE outcome NOT LIKE 'ok%'
 GROUP BY 1 ORDER BY 1;
-- No error wrote anything, and no error is an internal one.
SELECT count(*) AS errors_that_wrote FROM results WHERE outcome NOT LIKE 'ok%' AND writes <> 'none';
SELECT count(*) AS internal_errors FROM results WHERE outcome LIKE 'XX%';

-- Both tables are byte-for-byte as before, and every known key gets the same decision.
SELECT b.tbl, a.rows, (a.rows, a.as_text, a.as_bytes) = (b.rows, b.as_text, b.as_bytes) AS unchanged
  FROM pictures_before b JOIN pg_temp.table_pictures() a USING (tbl) ORDER BY tbl;
SELECT decisions = pg_temp.decisions() AS same_decisions FROM decisions_before;

-- Leases (rate_limit_acquire, rate_limit_release), crossed the same way against a concurrency limit 'cc' of
-- 2 slots defined for them; every other limit (tb, the default, ...) is of the wrong kind (42809). A valid
-- session-scoped case's lease goes with its rolled-back savepoint, as a lease taken by any (sub)transaction
-- that rolls back does: no case leaves one, and rate_limit_release finds none (false).
SELECT rate_limit_define('cc', rate => 2, period => '1 hour', algorithm => 'concurrency');
INSERT INTO arguments VALUES
    ('rate_limit_acquire', 1, 'key', 'key', $$'half'$$),
    ('rate_limit_acquire', 2, 'limit_name', 'name', $$'cc'$$),
    ('rate_limit_acquire', 3, 'scope', 'scope', $$'transaction'$$),
    ('rate_limit_release', 1, 'key', 'key', $$'half'$$),
    ('rate_limit_release', 2, 'limit_name', 'name', $$'cc'$$);
INSERT INTO argument_values (kind, n, label, expr) VALUES
    ('scope', 1, 'NULL', 'NULL'),
    ('scope', 2, 'empty', $$''$$),
    ('scope', 3, 'transaction', $$'transaction'$$),
    ('scope', 4, 'session', $$'session'$$),
    ('scope', 5, 'Session (case differs)', $$'Session'$$),
    ('scope', 6, 'trailing space', $$'session '$$),
    ('scope', 7, 'control byte \x01', $$E'\x01'$$),
    ('scope', 8, '1000000 bytes', $$repeat('s', 1000000)$$);
CREATE TEMP TABLE lease_cases (id serial, fn text, arg text, label text, statement text);
INSERT INTO lease_cases (fn, arg, label, statement)
SELECT a.fn, a.arg, v.label,
       format('SELECT %s(%s)::text%s', a.fn,
              (SELECT string_agg(CASE WHEN o.pos = a.pos THEN v.expr ELSE o.good END, ', ' ORDER BY o.pos)
                 FROM arguments o WHERE o.fn = a.fn),
              v.from_clause)
  FROM arguments a JOIN argument_values v ON v.kind = a.kind
 WHERE a.fn IN ('rate_limit_acquire', 'rate_limit_release')
 ORDER BY a.fn, a.pos, v.n;
INSERT INTO lease_cases (fn, arg, label, statement) VALUES
    ('rate_limit_acquire', '(all)', 'all NULL', 'SELECT rate_limit_acquire(NULL, NULL, NULL)::text'),
    ('rate_limit_acquire', 'limit_name', 'a sliding window', $$SELECT rate_limit_acquire('half', 'sw')::text$$),
    ('rate_limit_acquire', 'limit_name', 'a sharded limit', $$SELECT rate_limit_acquire('half', 'sh')::text$$),
    ('rate_limit_release', '(all)', 'all NULL', 'SELECT rate_limit_release(NULL, NULL)::text'),
    ('rate_limit_release', 'limit_name', 'a rate limit (never holds leases)',
     $$SELECT rate_limit_release('half', 'tb')::text$$),
    ('rate_limit_request', 'limit_name', 'the concurrency limit cc', $$SELECT rate_limit_request('half', 'cc')::text$$),
    ('rate_limit_check', 'limit_name', 'the concurrency limit cc', $$SELECT rate_limit_check('half', 'cc')::text$$),
    ('rate_limit_refund', 'limit_name', 'the concurrency limit cc', $$SELECT rate_limit_refund('half', 'cc')::text$$),
    ('rate_limit_reset', 'limit_name', 'the concurrency limit cc', $$SELECT rate_limit_reset('half', 'cc')::text$$),
    ('rate_limit_throttle', 'limit_name', 'the concurrency limit cc',
     $$SELECT rate_limit_throttle('half', 'cc')::text$$),
    ('rate_limit_enforce', 'limit_name', 'the concurrency limit cc', $$SELECT rate_limit_enforce('half', 'cc')::text$$),
    ('rate_limit_settle', 'limit_name', 'the concurrency limit cc',
     $$SELECT rate_limit_settle('half', 'cc', 1, 1)::text$$),
    ('rate_limit_request_many', 'limit_name', 'the concurrency limit cc',
     $$SELECT count(*)::text FROM rate_limit_request_many(ARRAY['half'], 'cc')$$),
    ('rate_limit_request_all', 'limit_names', 'the concurrency limit cc (second)',
     $$SELECT count(*)::text FROM rate_limit_request_all(ARRAY['half', 'half'], ARRAY['tb', 'cc'])$$),
    ('rate_limit_override', 'rate', '2.5 slots on cc', $$SELECT rate_limit_override('half', 'cc', 2.5)::text$$),
    ('rate_limit_override', 'rate', '10001 slots on cc', $$SELECT rate_limit_override('half', 'cc', 10001)::text$$),
    ('rate_limit_override', 'capacity', '3 for 3 slots on cc',
     $$SELECT rate_limit_override('half', 'cc', 3, 3)::text$$),
    ('rate_limit_override', 'capacity', '4 for 3 slots on cc',
     $$SELECT rate_limit_override('half', 'cc', 3, 4)::text$$),
    ('rate_limit_override', 'max_reserved', '1 on cc', $$SELECT rate_limit_override('half', 'cc', 3, NULL, 1)::text$$),
    ('rate_limit_define', 'rate', 'concurrency, 0 slots', $$SELECT rate_limit_define('cc', 0, '1 hour', 'concurrency')::text$$),
    ('rate_limit_define', 'rate', 'concurrency, 1.5 slots',
     $$SELECT rate_limit_define('cc', 1.5, '1 hour', 'concurrency')::text$$),
    ('rate_limit_define', 'rate', 'concurrency, 10000 slots (max)',
     $$SELECT rate_limit_define('cc', 10000, '1 hour', 'concurrency')::text$$),
    ('rate_limit_define', 'rate', 'concurrency, 10001 slots',
     $$SELECT rate_limit_define('cc', 10001, '1 hour', 'concurrency')::text$$),
    ('rate_limit_define', 'rate', 'concurrency, NaN slots',
     $$SELECT rate_limit_define('cc', 'NaN', '1 hour', 'concurrency')::text$$),
    ('rate_limit_define', 'rate', 'concurrency, Infinity slots',
     $$SELECT rate_limit_define('cc', 'Infinity', '1 hour', 'concurrency')::text$$),
    ('rate_limit_define', 'period', 'concurrency, 1 microsecond',
     $$SELECT rate_limit_define('cc', 2, '1 microsecond', 'concurrency')::text$$),
    ('rate_limit_define', 'period', 'concurrency, 0', $$SELECT rate_limit_define('cc', 2, '0', 'concurrency')::text$$),
    ('rate_limit_define', 'capacity', 'concurrency, capacity 3 for 2 slots',
     $$SELECT rate_limit_define('cc', 2, '1 hour', 'concurrency', 3)::text$$),
    ('rate_limit_define', 'max_reserved', 'concurrency, unlimited (Infinity)',
     $$SELECT rate_limit_define('cc', 2, '1 hour', 'concurrency', NULL, 'Infinity')::text$$),
    ('rate_limit_define', 'shards', 'concurrency, 2 shards',
     $$SELECT rate_limit_define('cc', 2, '1 hour', 'concurrency', shards => 2)::text$$),
    ('rate_limit_define', 'storage', 'concurrency, memory',
     $$SELECT rate_limit_define('cc', 2, '1 hour', 'concurrency', storage => 'memory')::text$$),
    ('rate_limit_define', 'start', 'concurrency with a start',
     $$SELECT rate_limit_define('cc', 2, '1 hour', 'concurrency', start => '2026-01-01+00')::text$$),
    ('rate_limit_define', 'time_zone', 'concurrency in a zone',
     $$SELECT rate_limit_define('cc', 2, '1 day', 'concurrency', time_zone => 'UTC')::text$$),
    ('rate_limit_define', 'algorithm', 'fw becomes a concurrency limit (its keys'' rows go)',
     $$SELECT rate_limit_define('fw', 5, '1 hour', 'concurrency')::text$$);
SELECT c.id, c.fn, c.arg, c.label, pg_temp.cut(r.outcome) AS outcome, pg_temp.cut(r.detail) AS detail, r.effect,
       r.writes
  INTO TEMP lease_results
  FROM lease_cases c, pg_temp.run_case(c.statement) AS r
 ORDER BY c.id;
SELECT id, fn, arg, label, outcome, detail, effect, writes FROM lease_results ORDER BY id;
SELECT count(*) AS lease_cases, count(*) FILTER (WHERE outcome NOT LIKE 'ok%') AS errors,
       count(*) FILTER (WHERE outcome NOT LIKE 'ok%' AND writes <> 'none') AS errors_that_wrote,
       count(*) FILTER (WHERE outcome LIKE 'XX%') AS internal_errors
  FROM lease_results;
SELECT left(outcome, 5) AS sqlstate, count(*) FROM lease_results WHERE outcome NOT LIKE 'ok%' GROUP BY 1 ORDER BY 1;
-- No session lease is left by the cases (each rolled back), nor after pg_advisory_unlock_all().
SELECT count(*) AS session_leases FROM pg_locks WHERE locktype = 'advisory' AND objsubid = 21070 AND pid = pg_backend_pid();
SELECT pg_advisory_unlock_all();
SELECT count(*) AS leases FROM pg_locks WHERE locktype = 'advisory' AND objsubid IN (21069, 21070);
SELECT rate_limit_drop('cc');

SELECT rate_limit_drop('tb');
SELECT rate_limit_drop('fw');
SELECT rate_limit_drop('sw');
SELECT rate_limit_drop('sh');
SELECT rate_limit_drop(repeat('n', 128));
SELECT count(*) AS state_rows FROM rate_limit_state;
RESET pg_ratelimit.fake_now;
