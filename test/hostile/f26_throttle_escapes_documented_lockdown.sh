#!/usr/bin/env bash
# Finding 26 (low-medium, careless DBA following the README): rate_limit_throttle consumes like
# rate_limit_request but is missing from the README's Privileges section, and the README's recipe "To
# restrict who may be limited at all, REVOKE EXECUTE ON FUNCTION rate_limit_request,
# rate_limit_request_many, rate_limit_check FROM PUBLIC" leaves it executable by PUBLIC (the install
# script neither grants nor revokes it: it keeps the default EXECUTE for PUBLIC). A role the DBA meant to
# lock out still consumes any key of any limit through it: it exhausts a victim's login throttle (a
# lockout), or floods a memory limit with new keys (f18), as if nothing had been revoked.
# The script runs the README's own REVOKE statement (read from README.md), then calls both functions as an
# ordinary role.
# Expected: after the documented lockdown the role cannot consume (42501 from rate_limit_throttle too,
# e.g. the README lists rate_limit_throttle in the recipe and the Privileges table, or the function
# requires EXECUTE on rate_limit_request).
source "$(dirname "$0")/lib.sh"
setup_review review_f26_outsider

readme="$(dirname "$0")/../../README.md"
lockdown=$(tr '\n' ' ' <"$readme" | grep -o 'REVOKE EXECUTE ON FUNCTION [^`]* FROM PUBLIC' | head -n 1)
[ -n "$lockdown" ] || { echo "no REVOKE ... FROM PUBLIC recipe found in README.md"; exit 2; }
echo "the README's lockdown: $lockdown"
q -c "$lockdown" -c "SELECT rate_limit_define('login', 3, '1 hour')" >/dev/null || exit 2
as_outsider() { psql -X -q -At -d "$REVIEW_DB" -U review_f26_outsider -v VERBOSITY=sqlstate "$@" 2>&1; }
request=$(as_outsider -c "SELECT allowed FROM rate_limit_request('victim', 'login')")
throttle=$(as_outsider -c "SELECT count(*) FILTER (WHERE limited = 0) FROM generate_series(1, 3), LATERAL rate_limit_throttle('victim' || left(generate_series::text, 0), 'login')")
victim=$(q -c "SELECT allowed FROM rate_limit_check('victim', 'login')")
echo "outsider's rate_limit_request: $request; rate_limit_throttle (3 calls, units taken): $throttle; victim allowed afterwards: $victim"
[[ "$request" == *42501* ]] || { echo "the README's lockdown did not even stop rate_limit_request"; exit 2; }
[[ "$throttle" != *42501* ]] &&
    reproduced "after the README's lockdown an ordinary role still consumes through rate_limit_throttle: it took $throttle units and locked the victim's key out (allowed: $victim)"
holds "the documented lockdown covers rate_limit_throttle"
