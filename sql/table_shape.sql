-- A DBA may change rate_limit_state. What requests can handle, they handle as SQL would (a column added:
-- inserts give it its default, updates keep it; columns dropped; the lookup index dropped, rebuilt or
-- re-created); what they cannot write correctly is refused with SQLSTATE 55000 at the next call, and
-- never crashes the server.
SET timezone = 'UTC';
SET datestyle = 'ISO';
SET intervalstyle = 'postgres';
SET pg_ratelimit.fake_now = '2026-01-01 00:00:00';
SELECT rate_limit_define('shape', rate => 100, period => '1 day');
SELECT allowed, remaining FROM rate_limit_request('old', 'shape');

-- Added columns: updates keep their values, inserts use their defaults.
ALTER TABLE rate_limit_state ADD COLUMN note text;
ALTER TABLE rate_limit_state ADD COLUMN n int NOT NULL DEFAULT 7;
SELECT allowed, remaining FROM rate_limit_request('old', 'shape');
SELECT allowed, remaining FROM rate_limit_request('new', 'shape');
UPDATE rate_limit_state SET note = 'kept', n = 8 WHERE limit_name = 'shape' AND key = 'new';
SELECT allowed, remaining FROM rate_limit_request('new', 'shape');
SELECT allowed, remaining FROM rate_limit_refund('new', 'shape');
SELECT key, value, note, n FROM rate_limit_state WHERE limit_name = 'shape' ORDER BY key;

-- Dropped columns stay in the table's descriptor for good; requests go on.
ALTER TABLE rate_limit_state DROP COLUMN note;
SELECT allowed, remaining FROM rate_limit_request('old', 'shape');
SELECT allowed, remaining FROM rate_limit_request('newer', 'shape');
ALTER TABLE rate_limit_state DROP COLUMN n;
SELECT allowed, remaining FROM rate_limit_request('new', 'shape');
SELECT key, value FROM rate_limit_state WHERE limit_name = 'shape' ORDER BY key;

-- Without the hash lookup index, keys are found through the primary key; re-created, it is used again.
DROP INDEX rate_limit_state_lookup;
SELECT allowed, remaining FROM rate_limit_request('old', 'shape');
SELECT allowed, remaining FROM rate_limit_request('newest', 'shape');
CREATE INDEX rate_limit_state_lookup ON rate_limit_state USING hash ((limit_name || key));
SELECT allowed, remaining FROM rate_limit_request('newest', 'shape');
REINDEX TABLE rate_limit_state;
SELECT allowed, remaining FROM rate_limit_request('newest', 'shape');

-- What requests cannot honour is refused, inside a transaction that is rolled back each time.
CREATE FUNCTION pg_temp.error_of(statement text) RETURNS text LANGUAGE plpgsql AS $$
BEGIN
    EXECUTE statement;
    RETURN 'no error';
EXCEPTION WHEN OTHERS THEN
    RETURN SQLSTATE || ': ' || SQLERRM;
END
$$;
CREATE FUNCTION pg_temp.noop() RETURNS trigger LANGUAGE plpgsql AS 'BEGIN RETURN NEW; END';
CREATE FUNCTION pg_temp.refused_after(change text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
    result text;
BEGIN
    EXECUTE change;
    result := pg_temp.error_of($q$SELECT rate_limit_request('old', 'shape')$q$) || ' / ' ||
              pg_temp.error_of($q$SELECT rate_limit_request('brand_new', 'shape')$q$) || ' / ' ||
              pg_temp.error_of($q$SELECT rate_limit_reset('old', 'shape')$q$);
    RAISE EXCEPTION USING MESSAGE = result, ERRCODE = 'P0004';
EXCEPTION WHEN assert_failure THEN
    RETURN SQLERRM;  -- rolls the change back
END
$$;
SELECT change, pg_temp.refused_after(change) FROM unnest(ARRAY[
    'CREATE TRIGGER t BEFORE UPDATE ON rate_limit_state FOR EACH ROW EXECUTE FUNCTION pg_temp.noop()',
    'CREATE RULE r AS ON UPDATE TO rate_limit_state DO ALSO NOTIFY rate_limit_state',
    'ALTER TABLE rate_limit_state ADD CHECK (value < 1000)',
    'ALTER TABLE rate_limit_state ADD COLUMN doubled float8 GENERATED ALWAYS AS (value * 2) STORED',
    'ALTER TABLE rate_limit_state ALTER COLUMN value TYPE numeric',
    'ALTER TABLE rate_limit_state RENAME COLUMN ts TO at',
    'ALTER TABLE rate_limit_state DROP CONSTRAINT rate_limit_state_pkey',
    'ALTER TABLE rate_limit_state ENABLE ROW LEVEL SECURITY, FORCE ROW LEVEL SECURITY',
    'ALTER TABLE rate_limit_state RENAME TO rate_limit_state_moved'
]) AS change;
-- The full message.
BEGIN;
ALTER TABLE rate_limit_state ADD CHECK (value < 1000);
SELECT rate_limit_request('old', 'shape');
ROLLBACK;

-- Afterwards everything works again, and the state is what the requests above left.
SELECT allowed, remaining FROM rate_limit_request('old', 'shape');
SELECT key, value FROM rate_limit_state WHERE limit_name = 'shape' ORDER BY key;
SELECT rate_limit_drop('shape');
RESET pg_ratelimit.fake_now;
