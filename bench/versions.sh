#!/usr/bin/env bash
# The default cell (synchronous_commit off, 2 clients, uniform keys over 100,000, rate_limit_request on a
# durable token bucket, and SELECT 1 beside it) on PostgreSQL 15 (the host's), 17 and 18 (the version
# matrix's Debian roots, scripts/matrix_root.sh), side by side in one run: the three servers run at once,
# each with the extension built for it, and one client, the host's pgbench, drives them in turn, in an
# order that rotates every round, so that the drift of a shared machine hits every version alike.
#   bench/versions.sh [OUT_DIR] [ROUNDS] [SECONDS]     (bench/results/versions, 7 rounds, 5 s)
# Writes OUT_DIR/versions.csv (one row per run) and OUT_DIR/versions.md (medians and ratios).
set -euo pipefail
source "$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)/scripts/common.sh"
out=${1:-$ROOT/bench/results/versions}
rounds=${2:-7}
seconds=${3:-5}
versions=(15 17 18)
ensure_packages "${PACKAGES[@]}"
mkdir -p "$out"
SERVER_OPTIONS="-c shared_preload_libraries=pg_ratelimit -c synchronous_commit=off -c max_connections=20"

# PostgreSQL 15 on the host, with the extension built from this tree.
build_and_install_extension >/dev/null
start_cluster $SERVER_OPTIONS
declare -A HOSTS=([15]=$CLUSTER_DIR)
# 17 and 18 in their roots: a command that starts a cluster and holds it until told to stop.
stop_flag=$RUN_DIR/stop-roots
for v in 17 18; do
    "$ROOT/scripts/matrix_root.sh" make "$v"
    "$ROOT/scripts/matrix_root.sh" copy "$v"
    "$ROOT/scripts/matrix_root.sh" run "$v" "cd /build/pg_ratelimit && export PG_MAJOR=$v && source scripts/common.sh &&
        build_and_install_extension >/dev/null && start_cluster $SERVER_OPTIONS >/dev/null &&
        echo \"\$CLUSTER_DIR\" >/tmp/bench-cluster-dir && while [ ! -e /src/.bench-stop-$v ]; do sleep 1; done" \
        >"$RUN_DIR/root$v.log" 2>&1 &
done
on_exit "touch '$ROOT/.bench-stop-17' '$ROOT/.bench-stop-18'; sleep 3; rm -f '$ROOT/.bench-stop-17' '$ROOT/.bench-stop-18'"
for v in 17 18; do
    root=$("$ROOT/scripts/matrix_root.sh" path "$v")
    for _ in $(seq 1 180); do [ -s "$root/tmp/bench-cluster-dir" ] && break; sleep 1; done
    HOSTS[$v]=$root$(cat "$root/tmp/bench-cluster-dir")
    for _ in $(seq 1 60); do "$PG_BIN/pg_isready" -q -h "${HOSTS[$v]}" -p 5432 && break; sleep 1; done
    rm -f "$root/tmp/bench-cluster-dir"
done

for v in "${versions[@]}"; do
    psql -X -q -v ON_ERROR_STOP=1 -h "${HOSTS[$v]}" -p 5432 -U postgres -d postgres \
        -c "CREATE EXTENSION IF NOT EXISTS pg_ratelimit" -c "SELECT rate_limit_define('bench', rate => 1e12, period => '1 second')" >/dev/null
    echo "PostgreSQL $v: $(psql -X -At -h "${HOSTS[$v]}" -p 5432 -U postgres -d postgres -c 'SHOW server_version')"
done

csv=$out/versions.csv
echo "round,version,query,tps" >"$csv"
for ((r = 1; r <= rounds; r++)); do
    for ((i = 0; i < 3; i++)); do
        v=${versions[$(((i + r) % 3))]}
        for query in select1 ext; do
            tps=$("$PG_BIN/pgbench" -n -M prepared -c 2 -j 2 -T "$seconds" -f "$ROOT/bench/pgbench/$query.sql" \
                -h "${HOSTS[$v]}" -p 5432 -U postgres postgres 2>&1 | sed -n 's/^tps = \([0-9.]*\).*/\1/p')
            echo "$r,$v,$query,$tps" >>"$csv"
            printf '.' >&2
        done
    done
done
echo >&2

median() { sort -g | awk '{ v[NR] = $1 } END { if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
tps_of() { awk -F, -v v="$1" -v q="$2" 'NR > 1 && $2 == v && $3 == q { print $4 }' "$csv" | median; }
# Median over rounds of the ratio of (version a, query qa) to (version b, query qb), paired by round.
ratio() { awk -F, -v a="$1" -v qa="$2" -v b="$3" -v qb="$4" 'NR > 1 { t[$1, $2, $3] = $4; n = $1 > n ? $1 : n }
    END { for (r = 1; r <= n; r++) if (t[r, b, qb] > 0) print t[r, a, qa] / t[r, b, qb] }' "$csv" | median; }
{
    echo "# The default cell on PostgreSQL 15, 17 and 18, one run"
    echo
    echo "synchronous_commit off, 2 clients (pgbench -M prepared -c 2 -j 2, the host's PostgreSQL 15 pgbench for"
    echo "every server), uniform keys over 100,000 (\`bench/pgbench/ext.sql\`: SELECT * FROM rate_limit_request(...) on"
    echo "a durable token bucket that admits everything), and SELECT 1 (\`bench/pgbench/select1.sql\`). $rounds rounds,"
    echo "each version ${seconds} s per query per round, versions in an order that rotates every round, the three"
    echo "servers running at once (17 and 18 in Debian roots on the same machine). tps: medians over the rounds;"
    echo "ratios: medians of per-round ratios."
    echo
    echo "| PostgreSQL | rate_limit_request tps | SELECT 1 tps | ÷ SELECT 1 | ÷ PostgreSQL 15's |"
    echo "|--:|--:|--:|--:|--:|"
    for v in "${versions[@]}"; do
        printf '| %s | %.0f | %.0f | %.2f | %.2f |\n' "$v" "$(tps_of "$v" ext)" "$(tps_of "$v" select1)" \
            "$(ratio "$v" ext "$v" select1)" "$(ratio "$v" ext 15 ext)"
    done
} >"$out/versions.md"
cat "$out/versions.md"
