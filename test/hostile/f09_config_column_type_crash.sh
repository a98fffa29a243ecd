#!/usr/bin/env bash
# Finding 9 (medium, DBA): the shape of rate_limit_config is never checked. limit_read() takes the
# columns by position and reads them with the types of the install script. A DBA who stores periods as
# seconds (drops the period CHECK, ALTER COLUMN period TYPE bigint) crashes the server at the next
# uncached request: DatumGetIntervalP(3600). Other changes give garbage limits without any error:
# rate/capacity as numeric are read as float8 from a pointer (capacity 4.7e-310 here, 'cost 1 exceeds
# the capacity'). Adding a column to rate_limit_config makes every define/drop fail with the internal
# "rate_limit_config_row: must fire BEFORE ... FOR EACH ROW" (XX000), whose text is misleading.
# Expected: 55000 with a clear message whenever rate_limit_config's columns are not those of the
# install script (check the SPI result descriptor's types, or the relation like state_relations does).
source "$(dirname "$0")/lib.sh"
setup_review

q_any <<'SQL'
BEGIN;
ALTER TABLE rate_limit_config ALTER COLUMN rate TYPE numeric, ALTER COLUMN capacity TYPE numeric;
SELECT 'numeric columns', * FROM rate_limit_request('k');
ROLLBACK;
BEGIN;
ALTER TABLE rate_limit_config ADD COLUMN note text;
SELECT 'added column', rate_limit_define('api', 1, '1 hour');
ROLLBACK;
SQL
before=$(crash_count)
out=$(q_any <<'SQL'
BEGIN;
ALTER TABLE rate_limit_config DROP CONSTRAINT rate_limit_config_period_check;
ALTER TABLE rate_limit_config ALTER COLUMN period TYPE bigint USING extract(epoch FROM period)::bigint;
SELECT 'bigint period', * FROM rate_limit_request('k');
ROLLBACK;
SQL
)
echo "$out"
wait_for_server
if [ "$(crash_count)" -gt "$before" ] || grep -q 'server closed the connection unexpectedly' <<<"$out"; then
    reproduced "a request after ALTER COLUMN period TYPE bigint on rate_limit_config crashed the server"
fi
holds "the altered rate_limit_config was refused"
