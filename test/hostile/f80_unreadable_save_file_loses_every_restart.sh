#!/usr/bin/env bash
# Finding 80 (low): one save file the server cannot read (pg_stat/pg_ratelimit_memory.state left owned by
# root by a restore or copy run as root, or with its mode changed) makes every later clean restart lose the
# memory state, for good, with a LOG line each time. load_file() logs "could not read" and leaves the file
# where it is; at the next clean shutdown save_file() writes the temporary file and durable_rename() first
# opens the existing target to fsync it, fails (Permission denied), logs and gives up: the table's state is
# never saved again until someone removes the file by hand. The README's table says memory state survives
# a clean restart ("saved at shutdown, loaded at start").
# Attack: on a cluster of its own, a memory key uses 3 of 10; clean restart (kept: the control case); the
# save file is made unreadable during a stop (root: chown root, mode 600; otherwise mode 000); the server
# starts, the key uses 3 more, clean restart.
# Expected: that last clean restart keeps the key's state (the unreadable file removed or replaced): the
# start with the unreadable file could not load it (10 left, then 7 after the 3 uses), and 7 are left after.
here=$(dirname "$0")
source "$here/lib.sh"
source "$here/own_cluster.sh"
own_cluster_start
export PGDATABASE=postgres
p() { psql -X -q -At -v ON_ERROR_STOP=1 "$@"; }
file=$OWN_DIR/data/pg_stat/pg_ratelimit_memory.state
unreadable() {
    if [ "$(id -u)" -eq 0 ]; then chown root: "$file" && chmod 600 "$file"; else chmod 000 "$file"; fi
}
left() { p -c "SELECT (rate_limit_check('k', 'm')).remaining + 1"; }
p -c "CREATE EXTENSION pg_ratelimit" -c "SELECT rate_limit_define('m', 10, '1 day', storage => 'memory')" \
  -c "SELECT count(*) FROM rate_limit_request_many(ARRAY['k', 'k', 'k'], 'm')" >/dev/null || exit 2
own_cluster_restart
control=$(left)
own_cluster_restart unreadable
p -c "SELECT count(*) FROM rate_limit_request_many(ARRAY['k', 'k', 'k'], 'm')" >/dev/null || exit 2
before=$(left)
own_cluster_restart
after=$(left)
echo "left of 10: after a clean restart $control; with an unreadable save file in place, $before before and $after after a clean restart"
grep 'pg_ratelimit_memory.state' "$SERVER_LOG" | sed 's/^/  log: /'
[ "$control" = 7 ] && [ "$before" = 7 ] || { echo "unexpected setup"; exit 2; }
[ "$after" != "$before" ] && reproduced "a clean restart lost the memory state ($before left -> $after) because an unreadable save file was in the way"
holds "a clean restart keeps the memory state after an unreadable save file"
