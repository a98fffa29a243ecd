#!/usr/bin/env bash
# Attacks on calendar quotas (commits 4d6c04d..9371b75) that held: for each zone and unit (day, week,
# month), fresh keys exhausted at instants walked through odd transitions (Lord_Howe's 30-minute DST,
# Apia's skipped 2011-12-30, Sao Paulo's skipped and repeated midnights, Troll's 2-hour DST, Tehran, Paris
# LMT before 1911 (offsets with seconds), Juneau's 24-hour step back in 1867, Manila's skipped day in 1844,
# Kwajalein 1993, Kiritimati 1994) in one session (the zone's memo of recent windows sees time go back and
# forth): retry_after is the next opening as PostgreSQL computes it (timestamp AT TIME ZONE), a caller
# 1 us earlier is denied and one at exactly retry_after is served.
source "$(dirname "$0")/lib.sh"
setup_review
q >/dev/null <<'SQL'
CREATE OR REPLACE FUNCTION chk(z text, u text, t0 timestamptz, t1 timestamptz, step interval, jitter_us bigint DEFAULT 0)
RETURNS TABLE(t timestamptz, got interval, expected interval, note text) LANGUAGE plpgsql AS $$
DECLARE
  t_ timestamptz := t0; loc timestamp; d timestamp; b0 timestamptz; b1 timestamptz; b2 timestamptz; bm timestamptz;
  nxt timestamptz; r record; n int := 0; unitiv interval := ('1 ' || u)::interval; lname text := 'c_' || u;
BEGIN
  PERFORM rate_limit_define(lname, 1, unitiv, 'fixed_window', time_zone => z);
  WHILE t_ < t1 LOOP
    n := n + 1;
    PERFORM set_config('pg_ratelimit.fake_now', t_::text, true);
    loc := t_ AT TIME ZONE z;
    d := date_trunc(u, loc);
    bm := (d - unitiv) AT TIME ZONE z; b0 := d AT TIME ZONE z; b1 := (d + unitiv) AT TIME ZONE z; b2 := (d + 2*unitiv) AT TIME ZONE z;
    IF t_ < b0 THEN nxt := b0; ELSIF t_ < b1 THEN nxt := b1; ELSE nxt := b2; END IF;
    PERFORM rate_limit_request('k' || n, lname);
    SELECT * INTO r FROM rate_limit_request('k' || n, lname);
    IF r.allowed OR r.retry_after <> nxt - t_ THEN
      t := t_; got := r.retry_after; expected := nxt - t_; note := 'retry'; RETURN NEXT;
    END IF;
    -- exactness
    PERFORM set_config('pg_ratelimit.fake_now', (t_ + r.retry_after - interval '1 microsecond')::text, true);
    IF (SELECT allowed FROM rate_limit_check('k' || n, lname)) THEN t := t_; got := r.retry_after; note := 'early'; RETURN NEXT; END IF;
    PERFORM set_config('pg_ratelimit.fake_now', (t_ + r.retry_after)::text, true);
    IF NOT (SELECT allowed FROM rate_limit_check('k' || n, lname)) THEN t := t_; got := r.retry_after; note := 'late'; RETURN NEXT; END IF;
    t_ := t_ + step + (random() * jitter_us)::bigint * interval '1 microsecond';
  END LOOP;
  t := NULL; note := 'n=' || n; RETURN NEXT;
  PERFORM rate_limit_drop(lname);
END $$;
SQL
out=$(q_any <<'SQL'
SELECT 'Lord_Howe',u,* from unnest(array['day','week','month']) u, chk('Australia/Lord_Howe',u,'2025-01-01','2027-01-01','5 hours 7 minutes', 3600000000) where note not like 'n=%';
SELECT 'Apia',u,* from unnest(array['day','week','month']) u, chk('Pacific/Apia',u,'2011-12-01','2012-01-10','37 minutes', 60000000) where note not like 'n=%';
SELECT 'SaoPaulo',u,* from unnest(array['day','week','month']) u, chk('America/Sao_Paulo',u,'2017-10-01','2019-03-01','3 hours 7 minutes', 3600000000) where note not like 'n=%';
SELECT 'Troll',u,* from unnest(array['day','week','month']) u, chk('Antarctica/Troll',u,'2025-01-01','2026-12-01','5 hours 7 minutes', 3600000000) where note not like 'n=%';
SELECT 'Tehran',u,* from unnest(array['day','week','month']) u, chk('Asia/Tehran',u,'2020-01-01','2023-12-01','5 hours 7 minutes', 3600000000) where note not like 'n=%';
SELECT 'ParisLMT',u,* from unnest(array['day','week','month']) u, chk('Europe/Paris',u,'1890-01-01','1912-01-01','2 days 5 hours 7 minutes', 3600000000) where note not like 'n=%';
SELECT 'Juneau',u,* from unnest(array['day','week','month']) u, chk('America/Juneau',u,'1867-09-15','1867-11-20','37 minutes', 60000000) where note not like 'n=%';
SELECT 'Manila',u,* from unnest(array['day','week','month']) u, chk('Asia/Manila',u,'1844-12-15','1845-01-20','37 minutes', 60000000) where note not like 'n=%';
SELECT 'Kwaj',u,* from unnest(array['day','week','month']) u, chk('Pacific/Kwajalein',u,'1993-08-01','1993-09-10','37 minutes', 60000000) where note not like 'n=%';
SELECT 'Kiritimati',u,* from unnest(array['day','week','month']) u, chk('Pacific/Kiritimati',u,'1994-12-15','1995-01-20','37 minutes', 60000000) where note not like 'n=%';
SQL
)
walked=$(q -c "SELECT sum(substr(note, 3)::int) FROM chk('Europe/Paris', 'day', '2026-03-27', '2026-04-01', '37 minutes')")
echo "$out"
echo "instants walked in the control run (Paris, 5 days): $walked"
[ "${walked:-0}" -gt 100 ] || { echo "the walk did not run"; exit 2; }
[ -z "$out" ] || reproduced "calendar windows differ from PostgreSQL's local midnights or retry_after is not exact (rows above)"
holds "retry_after exact to the microsecond and equal to PostgreSQL's next local midnight in every zone walked"
