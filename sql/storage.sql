-- Requests update a key's row in place. Usually the new version stays on its page (a HOT update, no
-- index change); on a full page it moves and needs its own index entry. Pack pages full, update every
-- key repeatedly, and check that each key still has exactly one row, found by lookups.
SET pg_ratelimit.fake_now = '2026-01-01 00:00:00';
ALTER TABLE rate_limit_state SET (fillfactor = 100);
SELECT rate_limit_define('dense', rate => 1000, period => '1 day');
SELECT count(*) AS keys FROM (SELECT rate_limit_request('key' || i, 'dense') FROM generate_series(1, 2000) AS i) AS calls;

BEGIN;
SELECT count(*) FILTER (WHERE (rate_limit_request('key' || i, 'dense')).allowed) AS admitted
  FROM generate_series(1, 5) AS j, generate_series(1, 2000) AS i;
SELECT n_tup_upd AS updates, n_tup_hot_upd < n_tup_upd AS some_updates_moved_off_page
  FROM pg_stat_xact_user_tables WHERE relid = 'rate_limit_state'::regclass;
COMMIT;

SELECT count(*) AS rows, count(DISTINCT key) AS keys, min(value), max(value)
  FROM rate_limit_state WHERE limit_name = 'dense';
SELECT allowed, remaining FROM rate_limit_check('key1', 'dense');
SELECT allowed, remaining FROM rate_limit_check('key2000', 'dense');

SELECT rate_limit_drop('dense');
ALTER TABLE rate_limit_state SET (fillfactor = 50);
RESET pg_ratelimit.fake_now;
