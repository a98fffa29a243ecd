#!/usr/bin/env bash
# Where the serialization failures (40001) between unrelated keys come from:
#   bench/serializable_conflicts.sh [--no-install] [--keys LIST] [--sync LIST] [harness options...]
#     --keys LIST   SERIALIZABLE cells' keys, any of uniform,new,hot (default uniform,new)
#     --sync LIST   synchronous_commit settings, any of off,on (default off)
#     --out DIR     where the results go (default bench/results/serializable-conflicts)
#     other options go to the harness (e.g. --rounds 10 --seconds 0.5; default: the full protocol), e.g.
#     --after-load "ALTER INDEX rate_limit_state_lookup SET (fillfactor = 10); REINDEX INDEX rate_limit_state_lookup"
#     to see what the pages' size does (an index page is the unit of a predicate lock on an index)
# For each (synchronous_commit, keys) it runs the harness's SERIALIZABLE cell alone (SELECT 1, the seed's
# function, the extension on the direct and on the SQL path, 8 clients, each call BEGIN / request /
# COMMIT through the client library's retry helper) against a throwaway cluster whose log names every
# connection's system (application_name "bench:ID"), and meanwhile samples the predicate locks
# (pg_locks, mode SIReadLock) every 0.2 s. It then reports, per cell and system:
#   - the predicate locks held at a time, by lock type (relation, page, tuple) and object: their
#     granularity is what decides which writes of other transactions conflict with a read;
#   - the 40001 errors of the server log, by message and DETAIL (the reason code);
#   - rate_limit_state's updates, HOT updates and inserts during the cell: an index entry is written only
#     by an insert or a non-HOT update, and only an index write conflicts with an index page's lock.
# Output in DIR: report.md; locks.tsv, the samples; errors.log, the 40001 lines of the server log.
set -euo pipefail
source "$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)/scripts/common.sh"

install=1 keys_list=uniform,new sync_list=off out=
command="bench/serializable_conflicts.sh${*:+ $*}"
harness_args=()
while [ $# -gt 0 ]; do
    case "$1" in
        --no-install) install=0 ;;
        --keys) keys_list=$2; shift ;;
        --sync) sync_list=$2; shift ;;
        --out) out=$(realpath -m "$2"); shift ;;
        *) harness_args+=("$1") ;;
    esac
    shift
done
out=${out:-$ROOT/bench/results/serializable-conflicts}
mkdir -p "$out"

ensure_packages "${PACKAGES[@]}"
[ "$install" = 1 ] && build_and_install_extension
cmake -S "$ROOT" -B "$ROOT/build-bench" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DPG_RATELIMIT_BUILD_TESTS=OFF -DPG_RATELIMIT_BUILD_BENCH=ON >/dev/null
cmake --build "$ROOT/build-bench" --target pg_ratelimit_bench -j2 >/dev/null
# The benchmark's server settings (bench/run.sh), and a log line that names the connection's system.
start_cluster -c shared_buffers=256MB -c max_wal_size=4GB -c checkpoint_timeout=30min -c max_connections=200 \
    -c "log_line_prefix='%m [%p] %a '"
log=$CLUSTER_DIR/server.log

# One sample: per system, lock type and object, how many predicate locks are held now. A committed
# transaction's locks stay while transactions that overlapped it run; pg_locks still shows its pid.
SAMPLE_SQL="SELECT a.application_name, l.locktype, coalesce(c.relname, l.relation::text), count(*)
  FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid LEFT JOIN pg_class c ON c.oid = l.relation
 WHERE l.mode = 'SIReadLock' AND a.application_name LIKE 'bench:%' GROUP BY 1, 2, 3"
STATS_SQL="SELECT n_tup_upd, n_tup_hot_upd, n_tup_ins FROM pg_stat_user_tables WHERE relname = 'rate_limit_state'"
SEED_STATS_SQL="SELECT n_tup_upd, n_tup_hot_upd, n_tup_ins FROM pg_stat_user_tables
                 WHERE relname = 'rate_limiting_token_bucket'"

: >"$out/locks.tsv"
: >"$out/errors.log"
report=$out/report.md
{
    echo "# Serialization failures between unrelated keys"
    echo
    echo "- **date**: $(date -u '+%Y-%m-%d %H:%M:%S UTC')"
    echo "- **commit**: $(git -C "$ROOT" rev-parse --short HEAD)$(git -C "$ROOT" diff --quiet HEAD -- extension \
        || echo ' (extension/ modified in the work tree)')"
    echo "- **command**: $command"
    echo "- **server**: $(psql -XAtc 'SELECT version()')"
    echo "- **predicate lock settings**: $(psql -XAtc "SELECT string_agg(name || '=' || setting, ', ' ORDER BY name)
        FROM pg_settings WHERE name LIKE 'max_pred_locks%'")"
} >"$report"

for sync in ${sync_list//,/ }; do
    for keys in ${keys_list//,/ }; do
        cell="sync=$sync keys=$keys"
        log "measuring $cell"
        cell_out=$CLUSTER_DIR/cell-$sync-$keys
        offset=$(stat -c %s "$log")
        "$ROOT/build-bench/bench/pg_ratelimit_bench" --serializable-only --serializable-keys "$keys" \
            --sync "$sync" --out "$cell_out" --source-dir "$ROOT/bench" "${harness_args[@]}" \
            >"$cell_out.log" 2>&1 &
        harness=$!
        until grep -q '^measuring' "$cell_out.log" 2>/dev/null; do
            kill -0 "$harness" 2>/dev/null || { cat "$cell_out.log"; die "the harness stopped"; }
            sleep 0.2
        done
        read -r upd0 hot0 ins0 < <(psql -XAtF ' ' -c "$STATS_SQL")
        read -r supd0 shot0 sins0 < <(psql -XAtF ' ' -c "$SEED_STATS_SQL")
        sample=0
        while kill -0 "$harness" 2>/dev/null; do
            sample=$((sample + 1))
            psql -XAtF $'\t' -c "$SAMPLE_SQL" 2>/dev/null | sed "s/^/$sync\t$keys\t$sample\t/" >>"$out/locks.tsv" || true
            sleep 0.2
        done
        wait "$harness" || { cat "$cell_out.log"; die "the harness failed"; }
        # Statistics reach the shared counters within a second of a backend going idle.
        sleep 1.5
        read -r upd1 hot1 ins1 < <(psql -XAtF ' ' -c "$STATS_SQL")
        read -r supd1 shot1 sins1 < <(psql -XAtF ' ' -c "$SEED_STATS_SQL")
        tail -c +"$((offset + 1))" "$log" | grep -A1 -E 'ERROR:  could not serialize' >"$CLUSTER_DIR/errors" || true
        sed "s/^/[$cell] /" "$CLUSTER_DIR/errors" >>"$out/errors.log"

        {
            echo
            echo "## $cell"
            echo
            echo "The harness's figures:"
            echo
            sed -n '/^| clients | system/,/^$/p' "$cell_out/report.md"
            echo "Predicate locks (SIReadLock) held at a time, over the samples in which the system held any" \
                "($sample samples in all, every 0.2 s):"
            echo
            echo "| system | lock type | object | mean | max | samples |"
            echo "|---|---|---|--:|--:|--:|"
            awk -F'\t' -v s="$sync" -v k="$keys" '$1 == s && $2 == k {
                    key = $4 "|" $5 "|" $6; sum[key] += $7; if ($7 > max[key]) max[key] = $7; n[key]++
                    held[$4 "|" $3] = 1
                }
                END {
                    for (h in held) { split(h, p, "|"); samples[p[1]]++ }
                    for (key in sum) { split(key, p, "|");
                        printf "| %s | %s | %s | %.1f | %d | %d |\n", p[1], p[2], p[3], sum[key] / samples[p[1]], max[key], n[key] }
                }' "$out/locks.tsv" | sort
            echo
            echo "40001 in the server log, by system, message and reason:"
            echo
            echo "| system | count | message | detail |"
            echo "|---|--:|---|---|"
            # Lines read "date time zone [pid] app LEVEL:  text". An error's DETAIL follows it from the same
            # backend; some 40001s have none.
            awk '/ ERROR:  could not serialize/ { if ($4 in pending) count[pending[$4] "|"]++
                                                   app = ($5 ~ /^bench:/) ? $5 : "?"; msg = $0; sub(/.*ERROR:  /, "", msg)
                                                   pending[$4] = app "|" msg; next }
                 / DETAIL:  / { if ($4 in pending) { d = $0; sub(/.*DETAIL:  /, "", d); count[pending[$4] "|" d]++
                                                    delete pending[$4] } }
                 END { for (p in pending) count[pending[p] "|"]++
                       for (c in count) { split(c, f, "|"); printf "| %s | %d | %s | %s |\n", f[1], count[c], f[2], f[3] } }' \
                "$CLUSTER_DIR/errors" | sort
            echo
            upd=$((upd1 - upd0)) hot=$((hot1 - hot0)) ins=$((ins1 - ins0))
            echo "During the cell, rate_limit_state (both access paths): $upd updates, $hot of them HOT" \
                "($((upd - hot)) non-HOT), $ins inserts; the seed's table: $((supd1 - supd0)) updates," \
                "$((shot1 - shot0)) HOT ($((supd1 - supd0 - shot1 + shot0)) non-HOT), $((sins1 - sins0)) inserts."
        } >>"$report"
    done
done
stop_cluster
log "wrote $report"
cat "$report"
