#!/usr/bin/env bash
# Finding 6 (low-medium, careless user): INSERT ... ON CONFLICT DO NOTHING into rate_limit_config
# overwrites an existing limit. The BEFORE INSERT row trigger turns every insert of an existing name into
# an UPDATE of that row before the executor's conflict check, so "seed these limits if they are absent"
# (a common migration idiom) silently replaces tuned production limits, and the statement even reports
# INSERT 0 0. A plain INSERT of a duplicate name never raises 23505 either.
# Expected: DO NOTHING leaves the existing row alone (and a plain duplicate INSERT raises 23505), e.g. by
# merging only while pg_restore runs (a session flag, or a restore-only function) or only when the
# statement has no ON CONFLICT clause; at the very least documenting it.
source "$(dirname "$0")/lib.sh"
setup_review

q -c "SELECT rate_limit_define('api', 5, '1 hour')" >/dev/null
tag=$(psql -X -d "$REVIEW_DB" -c "INSERT INTO rate_limit_config (name, algorithm, rate, period, capacity)
                                  VALUES ('api', 'token_bucket', 1000000, '1 second', 1000000)
                                  ON CONFLICT (name) DO NOTHING" 2>&1)
echo "$tag"
rate=$(q -c "SELECT rate FROM rate_limit_config WHERE name = 'api'")
echo "rate after ON CONFLICT DO NOTHING: $rate"
[ "$rate" != 5 ] && reproduced "ON CONFLICT DO NOTHING replaced the limit (rate 5 -> $rate) and reported '$tag'"
holds "DO NOTHING did nothing"
