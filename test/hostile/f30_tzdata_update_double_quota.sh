#!/usr/bin/env bash
# Finding 30 (medium): after the server's time zone database is updated (apt upgrade tzdata, as happens
# whenever a country changes its rules at short notice), sessions that already used a zone keep its old
# rules for the rest of their life, while new sessions read the new ones: time_zones.cpp caches each zone
# per backend (pg_tzset's cache, never reloaded), and the calendar's windows are computed in the calling
# backend. Two sessions of a pool then disagree on when the month opens, and a key is refilled twice: the
# old-rules session refills it at its midnight, the new-rules session at its own (the row's ts is still in
# "its" previous month). The README says a change of rules "applies when the server's tzdata is updated".
#
# Reproduced on a cluster of its own in a private mount namespace (root: unshare -m), so that the update
# is seen by that server only: Asia/Almaty, which moved from +06 to +05 on 2024-03-01 (tzdata 2024a), is
# first the old rules (+06, compiled with zic), then the system's file (+05). A session that used the zone
# before the update admits a monthly quota of 10 at 2026-07-31 18:30 UTC (August, at +06); a session
# opened after the update admits 10 more at 19:30 UTC (August, at +05; the 18:30 request was July there).
# Expected: at most 10 units between two consecutive openings under either set of rules (every session
# uses the same rules: zones reloaded when their file changes, or the limit's windows not read from a
# per-session cache).
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
if [ -z "${F30_IN_NAMESPACE:-}" ]; then
    [ "$(id -u)" -eq 0 ] || { echo "needs root (unshare -m, mount --bind); cannot run"; exit 2; }
    F30_IN_NAMESPACE=1 exec unshare -m --propagation private bash "$0" "$@"
fi
# shellcheck source=../../scripts/common.sh
source "$here/../../scripts/common.sh"
build_and_install_extension >/dev/null 2>&1 || die "build failed"
start_cluster >/dev/null 2>&1
export SERVER_LOG=$CLUSTER_DIR/server.log

zone=/usr/share/zoneinfo/Asia/Almaty
[ -f "$zone" ] || { echo "no $zone"; exit 2; }
mkdir -p "$RUN_DIR/tz"
echo 'Zone Asia/Almaty 6:00 - +06' >"$RUN_DIR/tz/old.zi"
zic -d "$RUN_DIR/tz" "$RUN_DIR/tz/old.zi" || { echo "zic failed"; exit 2; }
chmod -R a+rX "$RUN_DIR/tz"
mount --bind "$RUN_DIR/tz/Asia/Almaty" "$zone" || { echo "mount failed"; exit 2; }
on_exit "umount '$zone' 2>/dev/null"

psql -X -q -d postgres -c "CREATE DATABASE review_f30" >/dev/null && psql -X -q -d review_f30 -c "CREATE EXTENSION pg_ratelimit" >/dev/null || exit 2
export PGDATABASE=review_f30
# Session B: a session opened after the update (a new connection of the pool).
printf '%s\n' '#!/bin/sh' 'exec psql -X -At -c "SET pg_ratelimit.fake_now = '"'"'$1'"'"'" -c "$2"' >"$RUN_DIR/session_b"
chmod +x "$RUN_DIR/session_b"
export PATH=$RUN_DIR:$PATH

# Session A: a session that used the zone before the update, and lives on after it.
out=$(psql -X -At -v ON_ERROR_STOP=1 2>&1 <<SQL
SELECT rate_limit_define('monthly', 10, '1 month', 'fixed_window', time_zone => 'Asia/Almaty');
SET pg_ratelimit.fake_now = '2026-07-15 00:00:00+00';
SELECT 'A (before the update): August opens ' || (now_ + reset_after) FROM rate_limit_check('probe', 'monthly'),
       (SELECT '2026-07-15 00:00:00+00'::timestamptz AS now_) n;
\! umount $zone && echo "tzdata updated: Asia/Almaty is now +05"
\! session_b '2026-07-15 00:00:00+00' "SELECT 'B (after the update): August opens ' || ('2026-07-15 00:00:00+00'::timestamptz + reset_after) FROM rate_limit_check('probe', 'monthly')"
\! session_b '2026-07-15 00:00:00+00' "SELECT 'B 2026-07-15 00:00 cost 10: allowed ' || allowed FROM rate_limit_request('k', 'monthly', 10)"
SET pg_ratelimit.fake_now = '2026-07-31 18:30:00+00';
SELECT 'A 2026-07-31 18:30 cost 10: allowed ' || allowed FROM rate_limit_request('k', 'monthly', 10);
\! session_b '2026-07-31 19:30:00+00' "SELECT 'B 2026-07-31 19:30 cost 10: allowed ' || allowed FROM rate_limit_request('k', 'monthly', 10)"
SQL
)
echo "$out"
grep -q 'B 2026-07-15 00:00 cost 10: allowed true' <<<"$out" || { echo "setup failed"; exit 2; }
if grep -q 'A 2026-07-31 18:30 cost 10: allowed true' <<<"$out" && grep -q 'B 2026-07-31 19:30 cost 10: allowed true' <<<"$out"; then
    echo "REPRODUCED: after a tzdata update, a session with the old rules and one with the new admitted 10 + 10 units of a monthly quota of 10 within one hour (each refilled the key at its own midnight)"
    exit 1
fi
echo "holds: every session uses the same rules after the update (at most 10 admitted)"
