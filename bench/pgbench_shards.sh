#!/usr/bin/env bash
# The SERIALIZABLE hot key through pgbench's own retries, for limits with 1, 4 and 16 hot-key shards: the
# harness's hot-key cell measured by a second client that shares no code with the client library.
#   bench/pgbench_shards.sh OUT_DIR [ROUNDS] [SECONDS]      (bench/run.sh calls it; ROUNDS 5, SECONDS 4)
# Needs a running server loaded by the harness (the limits bench, bench_shards4 and bench_shards16 of
# bench/sql/setup.sql) in the libpq environment (PGHOST, ...), and pgbench on PATH.
#
# Each run: pgbench -M prepared -c 8 -j 2 -T SECONDS --max-tries=1000 bench/pgbench_serializable/hot_key.sql
# (BEGIN ISOLATION LEVEL SERIALIZABLE; SELECT * FROM rate_limit_request('k0', LIMIT); COMMIT). Like the
# harness, the three limits run one after the other in an order that rotates every round, and throughput
# ratios are medians of per-round ratios, so that drift of a shared machine hits every limit alike.
# Writes OUT_DIR/pgbench_shards.csv (one row per run) and OUT_DIR/pgbench_shards.md (the summary and the
# targets: 16 shards against one row, at least 10x fewer retried transactions and 3x the throughput).
set -euo pipefail
out=${1:?usage: bench/pgbench_shards.sh OUT_DIR [ROUNDS] [SECONDS]}
rounds=${2:-5}
seconds=${3:-4}
script=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/pgbench_serializable/hot_key.sql
shards_list=(1 4 16)
limit_of() { if [ "$1" = 1 ]; then echo bench; else echo "bench_shards$1"; fi; }

work=$(mktemp -d "${TMPDIR:-/tmp}/pgbench_shards.XXXXXX")
trap 'rm -rf "$work"' EXIT
mkdir -p "$out"
csv=$out/pgbench_shards.csv
echo "round,shards,tps,transactions,retried,retries,failed" >"$csv"

# The figure after "LABEL" in pgbench's summary (e.g. "number of transactions retried: 123 (4.5%)").
field() { sed -n "s/^$1[: =]*\([0-9.]*\).*/\1/p" "$2" | head -1; }

for ((r = 1; r <= rounds; r++)); do
    for ((k = 0; k < ${#shards_list[@]}; k++)); do
        s=${shards_list[$(((k + r) % ${#shards_list[@]}))]}
        run=$work/r$r-s$s
        mkdir "$run"
        pgbench -n -M prepared -c 8 -j 2 -T "$seconds" --max-tries=1000 -D "limit=$(limit_of "$s")" \
            -f "$script" -l --log-prefix="$run/log" >"$run/out" 2>&1 || { cat "$run/out" >&2; exit 1; }
        # The log's third field is the transaction's time in µs, retries included ("failed" if it failed).
        cat "$run"/log* | awk '$3 ~ /^[0-9]+$/ { print $3 }' >>"$work/latencies-$s"
        echo "$r,$s,$(field tps "$run/out"),$(field 'number of transactions actually processed' "$run/out")," \
            "$(field 'number of transactions retried' "$run/out"),$(field 'total number of retries' "$run/out")," \
            "$(field 'number of failed transactions' "$run/out")" | tr -d ' ' >>"$csv"
        printf '.' >&2
    done
done
echo >&2

median() { sort -g | awk '{ v[NR] = $1 } END { if (NR == 0) print "nan"; else if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
p99() { sort -n "$1" | awk '{ v[NR] = $1 } END { i = int(NR * 0.99); if (i < NR * 0.99) i++; if (i < 1) i = 1; print v[i] }'; }
# Median over rounds of tps(shards A) / tps(shards B), paired by round.
paired() { awk -F, -v a="$1" -v b="$2" 'NR > 1 { t[$1, $2] = $3; n = $1 > n ? $1 : n }
    END { for (r = 1; r <= n; r++) if (t[r, b] > 0) print t[r, a] / t[r, b] }' "$csv" | median; }
total() { awk -F, -v s="$1" -v c="$2" 'NR > 1 && $2 == s { x += $c } END { print x + 0 }' "$csv"; }

{
    echo "# pgbench, SERIALIZABLE, one hot key, 8 clients, --max-tries=1000"
    echo
    echo "$rounds rounds, each limit ${seconds} s per round (pgbench -M prepared -c 8 -j 2), limits in rotating order;"
    echo "\`bench/pgbench_serializable/hot_key.sql\`. tps: the median over the rounds (pgbench's, without connection"
    echo "time). Retried: transactions that needed at least one retry. p99: over all transactions of all rounds,"
    echo "retries included (pgbench's transaction log)."
    echo
    echo "| shards | tps | ÷ one row | transactions | retried | retried % | retries | failed | p99 µs |"
    echo "|--:|--:|--:|--:|--:|--:|--:|--:|--:|"
    for s in "${shards_list[@]}"; do
        tx=$(total "$s" 4) retried=$(total "$s" 5)
        awk -v s="$s" -v tps="$(awk -F, -v s="$s" 'NR > 1 && $2 == s { print $3 }' "$csv" | median)" \
            -v ratio="$(paired "$s" 1)" -v tx="$tx" -v retried="$retried" -v retries="$(total "$s" 6)" \
            -v failed="$(total "$s" 7)" -v p99="$(p99 "$work/latencies-$s")" \
            'BEGIN { printf "| %d | %.0f | %.2f | %d | %d | %.2f | %d | %d | %d |\n", s, tps, ratio, tx, retried,
                     tx ? 100 * retried / tx : 0, retries, failed, p99 }'
    done
    echo
    fewer=$(awk -v a="$(total 1 5)" -v at="$(total 1 4)" -v b="$(total 16 5)" -v bt="$(total 16 4)" \
        'BEGIN { x = a / at; y = b / bt; if (y == 0) print "inf"; else printf "%.1f", x / y }')
    faster=$(paired 16 1)
    echo "Targets, 16 shards against one row: retried transactions ${fewer}× fewer" \
        "($(awk -v f="$fewer" 'BEGIN { print ((f == "inf" || f >= 10) ? "met" : "NOT met") }'), target ≥ 10×);" \
        "throughput $(printf '%.2f' "$faster")× ($(awk -v f="$faster" 'BEGIN { print (f >= 3 ? "met" : "NOT met") }'), target ≥ 3×);" \
        "failed transactions $(( $(total 1 7) + $(total 4 7) + $(total 16 7) )) (target 0)."
} >"$out/pgbench_shards.md"
cat "$out/pgbench_shards.md" >&2
