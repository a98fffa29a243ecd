#!/usr/bin/env bash
# Finding 84 (low): f80's fix removes a memory save file the server cannot open at start; one it can open
# but not read is left in place. A directory at pg_stat/pg_ratelimit_memory.state (a restore script's
# mkdir -p, a tar of another layout) opens (fopen of a directory succeeds on Linux), reads as "incomplete
# or of another version" and stays; every clean shutdown then writes the temporary file and fails to rename
# it over the directory ("Is a directory"): the memory state is lost at every clean restart, for good, as
# f80 was (the .tmp file stays beside it).
# Attack: on a cluster of its own, a memory key uses 3 of 10; the save file is replaced by a directory
# during a stop; the server starts, the key uses 3 more, clean restart.
# Expected: that clean restart keeps the key's state (7 left), the directory removed or set aside at start.
here=$(dirname "$0")
source "$here/lib.sh"
source "$here/own_cluster.sh"
own_cluster_start
export PGDATABASE=postgres
p() { psql -X -q -At -v ON_ERROR_STOP=1 "$@"; }
file=$OWN_DIR/data/pg_stat/pg_ratelimit_memory.state
directory() {
    rm -f "$file" && mkdir "$file" || exit 2
    [ "$(id -u)" -eq 0 ] && chown postgres: "$file"
}
left() { p -c "SELECT (rate_limit_check('k', 'm')).remaining + 1"; }
p -c "CREATE EXTENSION pg_ratelimit" -c "SELECT rate_limit_define('m', 10, '1 day', storage => 'memory')" \
  -c "SELECT count(*) FROM rate_limit_request_many(ARRAY['k', 'k', 'k'], 'm')" >/dev/null || exit 2
own_cluster_restart
control=$(left)
own_cluster_restart directory
p -c "SELECT count(*) FROM rate_limit_request_many(ARRAY['k', 'k', 'k'], 'm')" >/dev/null || exit 2
before=$(left)
own_cluster_restart
after=$(left)
echo "units left of 10: after a clean restart $control; with the save file a directory, after 3 uses $before; after the next clean restart $after"
[ "$control" = 7 ] && [ "$before" = 7 ] || { echo "unexpected setup"; exit 2; }
[ "$after" != 7 ] && reproduced "with a directory in place of the save file a clean restart lost the memory state ($before -> $after left)"
holds "a directory in place of the save file no longer makes clean restarts lose the memory state"
