#!/usr/bin/env bash
# Runs every hostile-review script against a throwaway PostgreSQL 15 cluster (scripts/common.sh) and
# prints one line per script, then "cases: N" (the scripts run). Exits 1 if any finding reproduces again
# or any attack stops holding. ACCESS_PATH (direct or sql, default direct) sets pg_ratelimit.access_path.
# Usage: test/hostile/run.sh [script.sh ...]   (default: every f*.sh and held_attacks*.sh)
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
source "$here/../../scripts/common.sh"
build_and_install_extension
start_cluster -c max_prepared_transactions=2 -c shared_preload_libraries=pg_ratelimit -c pg_ratelimit.memory_keys=20000 -c pg_ratelimit.access_path="${ACCESS_PATH:-direct}"
export SERVER_LOG=$CLUSTER_DIR/server.log

cd "$here" || exit 1
scripts=("$@")
[ ${#scripts[@]} -eq 0 ] && scripts=(f*.sh held_attacks*.sh)
results=()
failed=()
status=0
for script in "${scripts[@]}"; do
    log "$script"
    output=$(bash "./$(basename "$script")" 2>&1)
    rc=$?
    echo "$output"
    results+=("$(printf '%-44s %s' "$(basename "$script")" "$(tail -n 1 <<<"$output")")")
    if [ $rc -ne 0 ]; then
        status=1
        failed+=("--- $(basename "$script") failed; its FAILED/REPRODUCED lines and last line:"
                 "$(grep -E 'FAILED|REPRODUCED|ERROR' <<<"$output" | tail -n 4)"
                 "$(tail -n 1 <<<"$output")")
    fi
done
echo; printf '%s\n' "${results[@]}"
crashes=$(grep -c 'terminated by signal' "$SERVER_LOG")
echo "crashes in the server log: $crashes"
[ "$crashes" -eq 0 ] || status=1
echo "cases: ${#scripts[@]}"
# The scripts that failed again, last, so that a report showing only the end of this output names them.
[ ${#failed[@]} -eq 0 ] || printf '%s\n' "${failed[@]}"
exit $status
