# Shared by the review scripts. Each script is a minimal reproduction of one finding against the server
# of the libpq environment (PGHOST etc.; test/hostile/run.sh starts a throwaway one). It works in a database
# and roles of its own, removed at exit, and ends with one line:
#   REPRODUCED: <what>   (exit 1): the defect is present
#   holds: <what>        (exit 0): the defect is gone
# SERVER_LOG, if set, is the server's log: crashes are detected there ("terminated by signal").
# shellcheck shell=bash
set -uo pipefail

REVIEW_DB=${REVIEW_DB:-review_$(basename "$0" .sh)}
export PGDATABASE=$REVIEW_DB
REVIEW_ROLES=()

# psql as the superuser, in the review database; extra arguments go to psql.
q() { psql -X -q -At -v ON_ERROR_STOP=1 -d "$REVIEW_DB" "$@"; }
# The same, but errors do not stop the script (their text is part of the output).
q_any() { psql -X -q -At -d "$REVIEW_DB" "$@" 2>&1; }

wait_for_server() {
    local _
    for _ in $(seq 1 60); do
        pg_isready -q -d postgres && psql -X -q -At -d postgres -c 'SELECT 1' >/dev/null 2>&1 && return 0
        sleep 1
    done
    echo "server did not come back" >&2
    return 1
}

cleanup_review() {
    wait_for_server || return 0
    psql -X -q -d postgres -c "DROP DATABASE IF EXISTS $REVIEW_DB WITH (FORCE)" >/dev/null 2>&1
    local role
    for role in "${REVIEW_ROLES[@]}"; do psql -X -q -d postgres -c "DROP ROLE IF EXISTS $role" >/dev/null 2>&1; done
}

# setup_review [ROLE...]: a fresh database with the extension in public, and login roles.
setup_review() {
    local role
    trap cleanup_review EXIT
    psql -X -q -d postgres -c "DROP DATABASE IF EXISTS $REVIEW_DB WITH (FORCE)" >/dev/null 2>&1
    for role in "$@"; do
        REVIEW_ROLES+=("$role")
        psql -X -q -d postgres -c "DROP ROLE IF EXISTS $role" >/dev/null 2>&1
        psql -X -q -v ON_ERROR_STOP=1 -d postgres -c "CREATE ROLE $role LOGIN" >/dev/null
    done
    psql -X -q -v ON_ERROR_STOP=1 -d postgres -c "CREATE DATABASE $REVIEW_DB" >/dev/null
    q -c "CREATE EXTENSION pg_ratelimit" >/dev/null
}

# poll_until SQL [SECONDS]: runs the query (as the superuser, in the review database, a new session each
# time: pg_stat_activity is not cached across polls) until it prints t; false if it has not after SECONDS
# (default 60). For waiting on other sessions (pg_locks, pg_stat_activity) instead of sleeping a guessed time.
poll_until() {
    local deadline=$((SECONDS + ${2:-60}))
    until [ "$(q -c "$1" 2>/dev/null)" = t ]; do
        [ "$SECONDS" -ge "$deadline" ] && return 1
        sleep 0.05
    done
}

# wait_for_file FILE: true once FILE exists (created by a session's \! touch), false after 60 s.
wait_for_file() { local _; for _ in $(seq 1 1200); do [ -e "$1" ] && return 0; sleep 0.05; done; return 1; }
# A psql meta-command (for -c) that blocks the session running it until FILE exists (at most 120 s): a
# session keeps what it holds until the script creates FILE, however slow the machine.
# shellcheck disable=SC2016  # the loop is expanded by psql's shell, not here
until_file() { printf '\\! i=0; while [ ! -e %q ] && [ $i -lt 2400 ]; do sleep 0.05; i=$((i + 1)); done' "$1"; }

crash_count() {
    if [ -n "${SERVER_LOG:-}" ] && [ -r "$SERVER_LOG" ]; then grep -c 'terminated by signal' "$SERVER_LOG"; else echo 0; fi
}

reproduced() { echo "REPRODUCED: $*"; exit 1; }
holds() { echo "holds: $*"; exit 0; }

# pg_ratelimit.memory_eviction = none for the script (ALTER SYSTEM), restored at exit, when the memory
# limits named are dropped and the review's roles and database go; client messages at ERROR only (the
# eviction WARNINGs of a full table would flood the output).
memory_eviction_none() {
    MEMORY_LIMITS_TO_DROP=("$@")
    trap restore_memory_eviction EXIT
    export PGOPTIONS="${PGOPTIONS:-} -c client_min_messages=error"
    q -c "ALTER SYSTEM SET pg_ratelimit.memory_eviction = none" -c "SELECT pg_reload_conf()" >/dev/null || exit 2
    sleep 1
    [ "$(q -c "SHOW pg_ratelimit.memory_eviction")" = none ] || { echo "memory_eviction is not none"; exit 2; }
}
restore_memory_eviction() {
    local limit
    psql -X -q -d postgres -c "ALTER SYSTEM RESET pg_ratelimit.memory_eviction" -c "SELECT pg_reload_conf()" >/dev/null 2>&1
    for limit in "${MEMORY_LIMITS_TO_DROP[@]}"; do
        q -c "SELECT rate_limit_drop('$limit')" >/dev/null 2>&1
    done
    cleanup_review
}

# A session lease held across a change (f52, f59, f60): defines 'exports' (concurrency, N = 1, period 1
# hour); in one session, A takes its only slot with a session lease and another session B probes it; then
# the -c commands given run in A's session; then A's session leases are counted and B probes again. Prints
# every output on one line: A's decision, B's before, what the commands print (errors as SQLSTATEs), the
# count, B's after. B's autocommit probes would warn that their lease ends at once: messages at ERROR only.
lease_held_across() {
    export PGOPTIONS="${PGOPTIONS:-} -c client_min_messages=error"
    q -c "SELECT rate_limit_define('exports', rate => 1, period => '1 hour', algorithm => 'concurrency')" >/dev/null ||
        return 2
    local probe="\\! psql -X -q -At -c \"SELECT allowed FROM rate_limit_acquire('acme', 'exports')\""
    q_any -v VERBOSITY=sqlstate -c "SELECT allowed FROM rate_limit_acquire('acme', 'exports', 'session')" -c "$probe" "$@" \
        -c "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND objsubid = 21070 AND pid = pg_backend_pid() AND granted" \
        -c "$probe" | tr '\n' ' '
}

# f63, f65, f66: a session that holds one more lease than it uses ('acme' under 'jobs', N = 2) runs $2 (a
# job that fails, releases, or both) after $3 (the jobs it holds); afterwards it must still hold exactly
# one session lease, and of three other sessions trying the key only one may get the other slot. Appends
# "$1: ..." to the caller's failures array when either is not so.
one_lease_left() {
    local held="SELECT 'held', count(*) FROM pg_locks WHERE objsubid = 21070 AND pid = pg_backend_pid();"
    local other="psql -X -q -At -c \"SELECT 'others', allowed FROM rate_limit_acquire('acme', 'jobs', 'session')\""
    local others="\\! $other -c \"SELECT 'others', allowed FROM rate_limit_acquire('acme', 'jobs', 'session')\" -c \"SELECT pg_sleep(0.3)\" & sleep 0.1; $other; wait"
    local out got
    out=$(printf '%s\n%s\n%s\n%s\n' "$3" "$2" "$held" "$others" | q_any -v VERBOSITY=sqlstate 2>&1)
    got=$(grep -c '^others|t$' <<<"$out")
    grep -q '^held|1$' <<<"$out" && [ "$got" = 1 ] ||
        failures+=("$1: a held lease gone, $got other session(s) admitted while it runs (N = 2): $(tr '\n' ' ' <<<"$out")")
}
