#!/usr/bin/env bash
# Finding 1 (critical): any role that can log in crashes the server (SIGSEGV, every session is
# terminated and the server goes through crash recovery).
#
# The extension's trigger functions rate_limit_config_row() and rate_limit_config_changed() keep the
# default EXECUTE for PUBLIC, so anybody may attach them to a table of their own (a temporary table is
# enough: TEMP is granted to PUBLIC). rate_limit_config_row only checks that the table has 7 columns,
# then reads column 1 as text (name_of -> DatumGetTextPP): an int in column 1 is dereferenced as a
# pointer.
# Expected: CREATE TRIGGER refused (no EXECUTE), or the function refuses any table but the extension's
# rate_limit_config (by OID), with an ERROR.
source "$(dirname "$0")/lib.sh"
setup_review review_f01_attacker

before=$(crash_count)
out=$(psql -X -q -At -d "$REVIEW_DB" -U review_f01_attacker 2>&1 <<'SQL'
CREATE TEMP TABLE t (a int, b int, c int, d int, e int, f int, g int);
CREATE TRIGGER t BEFORE INSERT ON t FOR EACH ROW EXECUTE FUNCTION public.rate_limit_config_row();
INSERT INTO t VALUES (42, 0, 0, 0, 0, 0, 0);
SELECT 'survived';
SQL
)
echo "$out"
wait_for_server
after=$(crash_count)
if [ "$after" -gt "$before" ] || grep -q 'server closed the connection unexpectedly' <<<"$out"; then
    reproduced "an unprivileged INSERT into the attacker's own temp table crashed the server"
fi
holds "the trigger function could not be used on a foreign table, no crash"
