#!/usr/bin/env bash
# Runs every review script against a throwaway PostgreSQL 15 cluster (scripts/common.sh) and prints
# one line per script. Exits 1 while any finding reproduces or any held attack stops holding.
# Usage: review/run.sh [script.sh ...]   (default: every f*.sh and held_attacks.sh)
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
source "$here/../scripts/common.sh"
build_and_install_extension
start_cluster -c max_prepared_transactions=2
export SERVER_LOG=$CLUSTER_DIR/server.log

cd "$here" || exit 1
scripts=("$@")
[ ${#scripts[@]} -eq 0 ] && scripts=(f*.sh held_attacks.sh)
results=()
status=0
for script in "${scripts[@]}"; do
    log "$script"
    output=$(bash "./$(basename "$script")" 2>&1)
    rc=$?
    echo "$output"
    results+=("$(printf '%-44s %s' "$(basename "$script")" "$(tail -n 1 <<<"$output")")")
    [ $rc -ne 0 ] && status=1
done
echo; printf '%s\n' "${results[@]}"
echo "crashes in the server log: $(grep -c 'terminated by signal' "$SERVER_LOG")"
exit $status
