#!/usr/bin/env bash
# Finding 98 (low): since f89's fix, a memory call that meets an entry of other numbers reads the definition
# again and decides under it (decide_key.cpp), but the functions build their result from the definition
# they read first (request_functions.cpp: throttle_body's `limit` column, decision_values' remaining):
# the caller is told the old capacity with a decision made under the new one. rate_limit_throttle's
# `limit` (redis-cell's X-RateLimit-Limit) then names a capacity under which the call could not have been
# admitted; f89's own measurement (admissions weighed by the capacity each reports) reads 1.2 to 1.75
# capacities for memory token buckets and GCRA redefined every 30 ms where the admissions themselves stay
# within the bound (1.13: checked by the one-switch runs of this review, in which a key exhausted under
# 100 per minute and redefined to 10 admitted nothing more).
# Attack: memory token bucket 'w', 10 per minute, key 'k' exhausted; 3 pgbench clients call
# rate_limit_throttle('k', 'w') for 2 s; after 0.7 s (0.12 of a unit refilled) the DBA redefines 'w' to 100
# per minute (proportional: 1.2 units of 100). Up to 10 trials.
# Expected: every admission reports limit 100 (it can only have been decided under 100 per minute: under
# 10 the key holds 0.12 of a unit). Found: in about half the trials the first admission after the
# redefinition reports limit 10.
here=$(dirname "$0")
source "$here/lib.sh"
setup_review
export PGOPTIONS="-c client_min_messages=error"
q -c "SHOW shared_preload_libraries" | grep -q pg_ratelimit || { echo "needs pg_ratelimit preloaded"; exit 2; }
trap 'q -c "SELECT rate_limit_drop('"'"'w'"'"')" >/dev/null 2>&1; cleanup_review' EXIT
q -c "CREATE TABLE adm (t timestamptz, lim bigint)" -c "CREATE TABLE defined (t timestamptz)" >/dev/null || exit 2
script=$(mktemp)
echo "INSERT INTO adm SELECT clock_timestamp(), \"limit\" FROM rate_limit_throttle('k', 'w') WHERE limited = 0;" >"$script"
wrong=0 trials=0 seen=""
for trial in $(seq 1 10); do
    trials=$trial
    q -c "SELECT rate_limit_define('w', 10, '1 minute', storage => 'memory', rescale => 'reset')" \
      -c "SELECT count(*) FROM generate_series(1, 15) WHERE (rate_limit_request('k', 'w')).allowed" -c "TRUNCATE adm, defined" >/dev/null || exit 2
    pgbench -n -c 3 -j 1 -T 2 -f "$script" "$REVIEW_DB" >/dev/null 2>&1 &
    sleep 0.7
    q -c "INSERT INTO defined VALUES (clock_timestamp())" -c "SELECT rate_limit_define('w', 100, '1 minute', storage => 'memory')" >/dev/null || exit 2
    wait
    seen=$(q -c "SELECT string_agg(lim || ' at +' || round(extract(epoch FROM t - (SELECT t FROM defined))::numeric, 3) || ' s', ', ' ORDER BY t) FROM adm WHERE t > (SELECT t FROM defined)")
    wrong=$(q -c "SELECT count(*) FROM adm WHERE lim = 10 AND t > (SELECT t FROM defined)")
    echo "trial $trial: admissions after the redefinition (reported limit): $seen"
    [ "$wrong" -gt 0 ] && break
done
rm -f "$script"
[ "$wrong" -gt 0 ] &&
    reproduced "a memory call decided after a redefinition to 100 per minute reports limit 10, under which it could not be admitted (trial $trials of 10)"
holds "every memory call reports the definition it decided under ($trials trials)"
