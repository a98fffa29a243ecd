#!/usr/bin/env bash
# Runs only the pg_regress and isolation suites against a throwaway cluster (for quick iteration;
# scripts/test.sh runs everything). Extra arguments go to make, e.g. REGRESS=token_bucket ISOLATION=.
set -euo pipefail
source "$(dirname "$0")/common.sh"
build_and_install_extension
start_cluster
make -C "$ROOT" -s installcheck PG_CONFIG="$PG_CONFIG" "$@"
