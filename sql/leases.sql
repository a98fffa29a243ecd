-- Concurrency limits (leases): rate_limit_acquire takes one of a key's N slots (N = the limit's rate) until
-- the transaction ends (scope 'transaction') or until rate_limit_release, session end or the limit's period
-- (scope 'session'). Leases are locks in PostgreSQL's lock manager (extension/leases/lease_slots.hpp). The clock is
-- pinned, so that every figure below is exact; session leases expire in bands of period / 8.
SET timezone = 'UTC';
SET datestyle = 'ISO';
SET intervalstyle = 'postgres';
SET pg_ratelimit.fake_now = '2026-01-01 00:00:00';
-- This session's leases, as pg_locks shows them (objsubid 21069: transaction, 21070: session).
CREATE FUNCTION pg_temp.my_leases(OUT transaction_leases bigint, OUT session_leases bigint) LANGUAGE sql AS $$
    SELECT count(*) FILTER (WHERE objsubid = 21069), count(*) FILTER (WHERE objsubid = 21070)
      FROM pg_locks WHERE locktype = 'advisory' AND pid = pg_backend_pid() AND granted
$$;

-- The definition: rate is the number of slots; capacity follows it, no reservations.
SELECT rate_limit_define('exports', rate => 2, period => '8 hours', algorithm => 'concurrency');
SELECT algorithm, rate, period, capacity, max_reserved, shards, storage FROM rate_limit_config WHERE name = 'exports';
SELECT * FROM rate_limit_policy('acme', 'exports');
-- A define holds the limit's lock (objsubid 21068) until it commits: pg_locks never shows it as a lease.
BEGIN;
SELECT rate_limit_define('exports', rate => 2, period => '8 hours', algorithm => 'concurrency');
SELECT allowed FROM rate_limit_acquire('acme', 'exports');
SELECT count(*) FILTER (WHERE objsubid = 21068) AS limit_locks, (pg_temp.my_leases()).*
  FROM pg_locks WHERE locktype = 'advisory' AND pid = pg_backend_pid() AND granted;
ROLLBACK;

-- Transaction leases: two holders, then denial. remaining is the free slots after the call; a denial's
-- retry_after is one band (period / 8: when a transaction lease ends is unknown); reset_after counts session
-- leases only.
BEGIN;
SELECT * FROM rate_limit_acquire('acme', 'exports');
SELECT * FROM rate_limit_acquire('acme', 'exports');
SELECT * FROM rate_limit_acquire('acme', 'exports');
SELECT * FROM pg_temp.my_leases();
-- Another key, another limit: slots of their own.
SELECT allowed, remaining FROM rate_limit_acquire('globex', 'exports');
COMMIT;
-- Released at COMMIT...
SELECT * FROM pg_temp.my_leases();
BEGIN;
SELECT allowed, remaining FROM rate_limit_acquire('acme', 'exports');
ROLLBACK;
-- ... and at ROLLBACK, and by ROLLBACK TO SAVEPOINT for the leases taken after it.
BEGIN;
SELECT allowed, remaining FROM rate_limit_acquire('acme', 'exports');
SAVEPOINT s;
SELECT allowed, remaining FROM rate_limit_acquire('acme', 'exports');
ROLLBACK TO SAVEPOINT s;
SELECT allowed, remaining FROM rate_limit_acquire('acme', 'exports');
SELECT allowed, remaining FROM rate_limit_acquire('acme', 'exports');
COMMIT;
-- An error caught in PL/pgSQL (a subtransaction) takes the lease taken in it along.
DO $$
BEGIN
    BEGIN
        PERFORM rate_limit_acquire('acme', 'exports');
        RAISE EXCEPTION 'boom';
    EXCEPTION WHEN raise_exception THEN NULL;
    END;
    RAISE NOTICE 'free after the caught error: %', (rate_limit_acquire('acme', 'exports')).remaining;
END
$$;

-- Session leases survive the COMMIT of the transaction that took them, and the transactions after it, and go
-- at rate_limit_release (the oldest first) or at session end. reset_after: until the last session lease
-- expires (8 hours, rounded up to the band).
BEGIN;
SELECT * FROM rate_limit_acquire('acme', 'exports', 'session');
COMMIT;
BEGIN;
SELECT * FROM rate_limit_acquire('acme', 'exports', 'session');
-- One taken by a transaction, a savepoint or a statement that fails goes with it, as a rate limit's
-- consumption would: the work it was for is undone (or its caller never saw the decision).
ROLLBACK;
SELECT * FROM pg_temp.my_leases();
SELECT a.allowed, 1 / (a.remaining - a.remaining) FROM rate_limit_acquire('acme', 'exports', 'session') AS a;
SELECT * FROM pg_temp.my_leases();
BEGIN;
SAVEPOINT s;
SELECT allowed FROM rate_limit_acquire('acme', 'exports', 'session');
ROLLBACK TO SAVEPOINT s;
SELECT * FROM pg_temp.my_leases();
-- Kept once its savepoint is released and its transaction commits.
SAVEPOINT s;
SELECT allowed FROM rate_limit_acquire('acme', 'exports', 'session');
RELEASE SAVEPOINT s;
COMMIT;
SELECT * FROM pg_temp.my_leases();
SELECT * FROM rate_limit_acquire('acme', 'exports');
-- A release takes effect at COMMIT, as an acquire does: a rollback undoes it (a transaction retried after
-- a serialization failure releases once). Outside BEGIN ... COMMIT, at once.
BEGIN;
SELECT rate_limit_release('acme', 'exports');
ROLLBACK;
SELECT * FROM pg_temp.my_leases();
SELECT rate_limit_release('acme', 'exports');
SELECT allowed, remaining FROM rate_limit_acquire('acme', 'exports');
SELECT rate_limit_release('acme', 'exports'), rate_limit_release('acme', 'exports');
-- A transaction lease is not released early: it ends with its transaction.
BEGIN;
SELECT allowed FROM rate_limit_acquire('acme', 'exports');
SELECT rate_limit_release('acme', 'exports');
SELECT * FROM pg_temp.my_leases();
COMMIT;
-- In a transaction that took a session lease, rate_limit_release frees that one first: if the transaction
-- then fails, the session's earlier lease is still held (one freed, not two).
SELECT allowed FROM rate_limit_acquire('acme', 'exports', 'session');
BEGIN;
SELECT allowed FROM rate_limit_acquire('acme', 'exports', 'session');
SELECT rate_limit_release('acme', 'exports');
ROLLBACK;
SELECT * FROM pg_temp.my_leases();
SELECT rate_limit_release('acme', 'exports');
-- A session acquire rolled back leaves a marker: the release its error path does takes the marker (false)
-- instead of another lease this session holds (job A's, still running).
SELECT allowed FROM rate_limit_acquire('acme', 'exports', 'session');
DO $$
BEGIN
    BEGIN
        PERFORM rate_limit_acquire('acme', 'exports', 'session');
        RAISE EXCEPTION 'job B failed';
    EXCEPTION WHEN raise_exception THEN
        RAISE NOTICE 'released in the handler: %', rate_limit_release('acme', 'exports');
    END;
END
$$;
SELECT * FROM pg_temp.my_leases();
-- A marker goes at the session's next acquire of the key (a new attempt) ...
BEGIN;
SAVEPOINT s;
SELECT allowed FROM rate_limit_acquire('acme', 'exports', 'session');
ROLLBACK TO SAVEPOINT s;
SELECT allowed FROM rate_limit_acquire('acme', 'exports', 'session');
SELECT rate_limit_release('acme', 'exports');
COMMIT;
SELECT * FROM pg_temp.my_leases();
-- ... and lasts until then, whatever runs in between (or until the limit's period has passed).
BEGIN;
SAVEPOINT s;
SELECT allowed FROM rate_limit_acquire('acme', 'exports', 'session');
ROLLBACK TO SAVEPOINT s;
COMMIT;
SELECT 'other statements';
SELECT rate_limit_release('acme', 'exports');
SELECT rate_limit_release('acme', 'exports');
SELECT * FROM pg_temp.my_leases();

-- Expiry: a session lease counts for the limit's period (here 8 hours, bands of 1 hour): at least that
-- long, at most one band more. Taken at 00:30, it still counts at 08:59:59 and no longer at 09:00, though
-- its holder never released it (still in pg_locks).
SET pg_ratelimit.fake_now = '2026-01-01 00:30:00';
SELECT * FROM rate_limit_acquire('initech', 'exports', 'session');
SET pg_ratelimit.fake_now = '2026-01-01 08:59:59';
SELECT * FROM rate_limit_acquire('initech', 'exports', 'session');
SELECT * FROM rate_limit_acquire('initech', 'exports', 'session');
SET pg_ratelimit.fake_now = '2026-01-01 09:00:00';
SELECT * FROM rate_limit_acquire('initech', 'exports', 'session');
SELECT * FROM pg_temp.my_leases();
-- The expired lease was given back by the acquire at 09:00 (its lock freed): two live leases, two releases,
-- then none left.
SELECT rate_limit_release('initech', 'exports'), rate_limit_release('initech', 'exports'),
       rate_limit_release('initech', 'exports'), rate_limit_release('initech', 'exports');
SET pg_ratelimit.fake_now = '2026-01-01 00:00:00';

-- pg_advisory_unlock_all() and DISCARD ALL release every session-level advisory lock, leases included
-- (a pooler's reset ends them as a session end would); rate_limit_release then finds none.
SELECT allowed FROM rate_limit_acquire('acme', 'exports', 'session');
SELECT pg_advisory_unlock_all();
SELECT * FROM pg_temp.my_leases();
SELECT rate_limit_release('acme', 'exports');

-- Per-key tiers: an override gives a key its own number of slots (capacity follows; nothing else may).
SELECT rate_limit_override('bigcorp', 'exports', 3);
SELECT rate, capacity, max_reserved, overridden FROM rate_limit_policy('bigcorp', 'exports');
BEGIN;
SELECT g, d.allowed, d.remaining FROM generate_series(1, 4) AS g, LATERAL rate_limit_acquire('bigcorp' || left(g::text, 0), 'exports') AS d;
COMMIT;
SELECT rate_limit_override('bigcorp', 'exports', 2.5);
SELECT rate_limit_override('bigcorp', 'exports', 3, capacity => 4);
SELECT rate_limit_override_drop('bigcorp', 'exports');

-- Redefinition while leases are held: the new N applies to new acquires. Raised from 2 to 3, one more is
-- admitted; lowered to 1, the one slot left is held, so acquires are denied; the leases on the slots beyond
-- it stay until they end, uncounted (so until they end, up to the old N can be in flight, never more).
SELECT g, d.allowed FROM generate_series(1, 2) AS g, LATERAL rate_limit_acquire('acme' || left(g::text, 0), 'exports', 'session') AS d;
SELECT rate_limit_define('exports', rate => 3, period => '8 hours', algorithm => 'concurrency');
SELECT allowed, remaining FROM rate_limit_acquire('acme', 'exports', 'session');
SELECT rate_limit_define('exports', rate => 1, period => '8 hours', algorithm => 'concurrency');
SELECT allowed, remaining FROM rate_limit_acquire('acme', 'exports', 'session');
SELECT * FROM pg_temp.my_leases();
-- A concurrency limit cannot become a rate limit (55000: its session leases would no longer count), by
-- rate_limit_define or by hand; dropped (and defined again as a rate limit), a lease can still be
-- released: rate_limit_release needs no definition.
SELECT rate_limit_define('exports', rate => 5, period => '1 hour');
UPDATE rate_limit_config SET algorithm = 'token_bucket' WHERE name = 'exports';
SELECT rate_limit_drop('exports');
SELECT rate_limit_define('exports', rate => 5, period => '1 hour');
SELECT rate_limit_release('acme' || left(g::text, 0), 'exports') FROM generate_series(1, 4) AS g;
SELECT rate_limit_release('nobody', 'no such limit');

-- A name and a key are kept apart: ('ab', 'c') and ('a', 'bc') have slots of their own.
SELECT rate_limit_define('ab', rate => 1, period => '1 hour', algorithm => 'concurrency');
SELECT rate_limit_define('a', rate => 1, period => '1 hour', algorithm => 'concurrency');
BEGIN;
SELECT allowed FROM rate_limit_acquire('c', 'ab');
SELECT allowed FROM rate_limit_acquire('bc', 'a');
COMMIT;

-- Any isolation level: leases read no table.
BEGIN ISOLATION LEVEL SERIALIZABLE;
SELECT allowed, remaining FROM rate_limit_acquire('c', 'ab');
SELECT allowed, remaining FROM rate_limit_acquire('c', 'ab');
COMMIT;
BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY;
SELECT allowed, remaining FROM rate_limit_acquire('c', 'ab');
COMMIT;

-- Jitter spreads a denial's retry_after (never below the band).
SELECT rate_limit_define('jittery', rate => 1, period => '8 minutes', algorithm => 'concurrency', jitter => '30 s');
BEGIN;
SELECT allowed FROM rate_limit_acquire('k', 'jittery');
SELECT bool_and(retry_after BETWEEN '1 minute' AND '1 minute 30 seconds') AS within_jitter,
       count(DISTINCT retry_after) > 1 AS spread
  FROM generate_series(1, 20) AS g, LATERAL rate_limit_acquire('k' || left(g::text, 0), 'jittery');
COMMIT;

-- Shadow mode: a free slot is taken as usual; with none free, the caller is let through without a lease,
-- flagged shadow_denied.
SELECT rate_limit_define('watched', rate => 1, period => '8 hours', algorithm => 'concurrency', shadow => true);
BEGIN;
SELECT * FROM rate_limit_acquire('k', 'watched');
SELECT * FROM rate_limit_acquire('k', 'watched');
SELECT * FROM pg_temp.my_leases();
COMMIT;
-- A session caller let through without a lease holds a marker instead: its release frees no other lease
-- (false), and the next release frees the lease held.
SELECT allowed FROM rate_limit_acquire('k', 'watched', 'session');
SELECT allowed, shadow_denied FROM rate_limit_acquire('k', 'watched', 'session');
SELECT rate_limit_release('k', 'watched');
SELECT * FROM pg_temp.my_leases();
SELECT rate_limit_release('k', 'watched');
SELECT rate_limit_drop('watched');

-- The rate functions refuse a concurrency limit, and rate_limit_acquire every other limit: 42809.
\set VERBOSITY sqlstate
SELECT rate_limit_request('k', 'ab');
SELECT rate_limit_check('k', 'ab');
SELECT rate_limit_refund('k', 'ab');
SELECT rate_limit_reset('k', 'ab');
SELECT rate_limit_enforce('k', 'ab');
SELECT rate_limit_settle('k', 'ab', 1, 1);
SELECT rate_limit_throttle('k', 'ab');
SELECT * FROM rate_limit_request_many(ARRAY['k'], 'ab');
SELECT * FROM rate_limit_request_many(ARRAY[]::text[], 'ab');
SELECT rate_limit_acquire('k', 'default');
SELECT rate_limit_acquire('k', 'exports');
\set VERBOSITY default
SELECT rate_limit_request('k', 'ab');

-- Definitions refused: N not a whole number in [1, 10000], a capacity, reservations, shards, storage, a start
-- or a calendar.
SELECT rate_limit_define('bad', rate => 2.5, period => '1 hour', algorithm => 'concurrency');
SELECT rate_limit_define('bad', rate => 0.5, period => '1 hour', algorithm => 'concurrency');
SELECT rate_limit_define('bad', rate => 10001, period => '1 hour', algorithm => 'concurrency');
SELECT rate_limit_define('bad', rate => 10000, period => '1 hour', algorithm => 'concurrency');
SELECT rate_limit_define('bad', rate => 2, period => '1 hour', algorithm => 'concurrency', capacity => 3);
SELECT rate_limit_define('bad', rate => 2, period => '1 hour', algorithm => 'concurrency', max_reserved => 1);
SELECT rate_limit_define('bad', rate => 2, period => '1 hour', algorithm => 'concurrency', shards => 2);
SELECT rate_limit_define('bad', rate => 2, period => '1 hour', algorithm => 'concurrency', storage => 'unlogged');
SELECT rate_limit_define('bad', rate => 2, period => '1 hour', algorithm => 'concurrency', start => '2026-01-01');
SELECT rate_limit_define('bad', rate => 2, period => '1 day', algorithm => 'concurrency', time_zone => 'UTC');
SELECT rate_limit_define('bad', rate => 2, period => '1 month', algorithm => 'concurrency');
-- Rows written by hand: the row trigger and the table's CHECK refuse the same.
INSERT INTO rate_limit_config (name, algorithm, rate, period, capacity, max_reserved)
VALUES ('bad', 'concurrency', 2.5, '1 hour', 2.5, 0);
INSERT INTO rate_limit_config (name, algorithm, rate, period, capacity, max_reserved)
VALUES ('bad', 'concurrency', 2, '1 hour', 2, NULL);
SELECT name FROM rate_limit_config WHERE name = 'bad';
SELECT rate_limit_drop('bad');

-- Redefining a rate limit with keys as a concurrency limit deletes their rows (nothing to carry over);
-- rate_limit_cleanup deletes a concurrency limit's rows written by hand, and passes over its leases.
SELECT allowed FROM rate_limit_request('k', 'exports');
SELECT rate_limit_define('exports', rate => 2, period => '8 hours', algorithm => 'concurrency');
SELECT count(*) AS rows_left FROM rate_limit_state WHERE limit_name = 'exports';
INSERT INTO rate_limit_state (limit_name, key, value, ts) VALUES ('exports', 'stray', 1, '2025-01-01');
SELECT allowed FROM rate_limit_acquire('k', 'exports', 'session');
SELECT rate_limit_cleanup('exports'), rate_limit_cleanup();
SELECT count(*) AS rows_left FROM rate_limit_state WHERE limit_name = 'exports';
SELECT rate_limit_release('k', 'exports');

-- A concurrency limit's period cannot change (55000): session leases carry time bands of the period they
-- were taken under. Another spelling of the same period is no change. N can change.
SELECT rate_limit_define('exports', rate => 2, period => '9 hours', algorithm => 'concurrency');
SELECT rate_limit_define('exports', rate => 3, period => '480 minutes', algorithm => 'concurrency');
UPDATE rate_limit_config SET period = '9 hours' WHERE name = 'exports';
SELECT rate, period FROM rate_limit_config WHERE name = 'exports';
-- A token bucket may become a concurrency limit of any period (it had no leases).
SELECT rate_limit_define('was_bucket', rate => 2, period => '1 hour');
SELECT rate_limit_define('was_bucket', rate => 2, period => '2 hours', algorithm => 'concurrency');

-- The clock stepped back (NTP, a VM resumed): a session lease taken in the next band still counts. Bands of
-- '8 hours' are an hour wide: a lease at 01:00:00.2, then the clock back at 00:59:59.9.
SET pg_ratelimit.fake_now = '2026-01-02 01:00:00.2';
SELECT a.allowed, b.allowed, c.allowed FROM rate_limit_acquire('stepped', 'exports', 'session') a,
       rate_limit_acquire('stepped', 'exports', 'session') b, rate_limit_acquire('stepped', 'exports', 'session') c;
SET pg_ratelimit.fake_now = '2026-01-02 00:59:59.9';
SELECT allowed, remaining FROM rate_limit_acquire('stepped', 'exports', 'session');
SELECT rate_limit_release('stepped', 'exports'), rate_limit_release('stepped', 'exports'),
       rate_limit_release('stepped', 'exports'), rate_limit_release('stepped', 'exports');
RESET pg_ratelimit.fake_now;

SELECT rate_limit_drop('exports'), rate_limit_drop('ab'), rate_limit_drop('a'), rate_limit_drop('jittery'),
       rate_limit_drop('was_bucket');
SELECT * FROM pg_temp.my_leases();
