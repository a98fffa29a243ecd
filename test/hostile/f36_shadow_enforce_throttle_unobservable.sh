#!/usr/bin/env bash
# Finding 36 (low-medium): through rate_limit_enforce and rate_limit_throttle, a shadow limit's would-be
# denials cannot be observed at all. README, Shadow mode: a limit defined with shadow => true "can watch
# live traffic before it bites", and "Every decision function honours it: rate_limit_enforce does not
# raise, rate_limit_throttle answers limited = 0". But enforce returns void, throttle's row has no flag, a
# denial writes nothing to the key's state, and the server logs nothing (no NOTICE, no log line, no
# counter): a DBA who puts a new limit in shadow mode behind an enforce trigger (the function made for
# triggers) or a throttle call has nothing to watch: a call that a real limit would refuse and one it
# would allow are indistinguishable, so the rollout the section describes cannot be judged.
# Attack: 5 enforce and 5 throttle calls on a shadow limit of 2 per hour, with client messages at DEBUG1
# and the server log read for the key.
# Expected: something observable for each would-be denial: a NOTICE or WARNING (or a server log line)
# naming the key (throttle still answering limited = 0).
source "$(dirname "$0")/lib.sh"
setup_review

out=$(q_any <<'SQL'
SET client_min_messages = debug1;
SELECT rate_limit_define('exports', 2, '1 hour', shadow => true);
SELECT rate_limit_enforce('acme-shadow-probe', 'exports') FROM generate_series(1, 5);
SELECT 'throttle', t.* FROM generate_series(1, 5), LATERAL rate_limit_throttle('acme-shadow-probe', 'exports') t;
SELECT 'usable', count(*) FROM rate_limit_throttle('acme-shadow-probe', 'exports');
SQL
)
echo "$out"
grep -q '^usable|1' <<<"$out" || { echo "setup failed"; exit 2; }
limited=$(grep -c '^throttle|1|' <<<"$out")
messages=$(grep -ciE '^(NOTICE|WARNING|LOG|DEBUG1|INFO):.*acme-shadow-probe' <<<"$out")
logged=0
if [ -n "${SERVER_LOG:-}" ] && [ -r "$SERVER_LOG" ]; then logged=$(grep 'acme-shadow-probe' "$SERVER_LOG" | grep -vc 'STATEMENT:'); fi
echo "throttle rows limited: $limited; client messages naming the key or limit: $messages; server log lines: $logged"
[ "$limited" -eq 0 ] || reproduced "rate_limit_throttle limited $limited calls of a shadow limit"
if [ "$messages" -eq 0 ] && [ "$logged" -eq 0 ]; then
    reproduced "8 calls a real limit would have refused (3 enforce, 5 throttle) left no trace: no flag, no message, no log line"
fi
holds "shadow denials through enforce and throttle are observable"
