#!/usr/bin/env bash
# Finding 41 (medium): rows of a dropped database stay in rate_limit_stats' shared table until the server
# restarts. rate_limit_stats_reset() removes only the rows of the database it runs in, and nothing frees
# them when a database is dropped (stats.cpp keys entries by database OID and never looks at pg_database).
# (a) A server whose databases come and go (per-test, per-branch or per-tenant databases; any role with
#     CREATEDB that installs the extension) fills the table for good: every limit of every database is then
#     counted in the shared overflow row, and no reset anywhere gets a row back.
# (b) The rows are found again by a database that gets the dropped one's OID (CREATE DATABASE ... OID n,
#     open to any CREATEDB role in PostgreSQL 15, or OID wrap-around): another owner's database shows the
#     dropped database's limit names and counts, and continues them.
# Attack: pg_ratelimit.stats_limits = 10. Database A counts 10 limits, then is dropped. (a) Database B:
# one limit, rate_limit_stats_reset(), one request. (b) A role with CREATEDB creates database C with A's
# OID and reads rate_limit_stats.
# Expected: (a) B's limit gets a row of its own; (b) C sees none of A's rows.
# Starts a cluster of its own (own_cluster.sh).
here=$(dirname "$0")
source "$here/lib.sh"
source "$here/own_cluster.sh"
own_cluster_start -c pg_ratelimit.stats_limits=10
p() { psql -X -q -At -v ON_ERROR_STOP=1 "$@"; }
p -d postgres -c "CREATE DATABASE tenant_a" -c "CREATE ROLE tenant_c LOGIN CREATEDB" || exit 2
a_oid=$(p -d postgres -c "SELECT oid FROM pg_database WHERE datname = 'tenant_a'")
p -d tenant_a -c "CREATE EXTENSION pg_ratelimit" \
    -c "SELECT rate_limit_define('a_customer_' || i, 10, '1 hour') FROM generate_series(1, 10) i" \
    -c "SELECT count(*) FROM (SELECT rate_limit_request('k', 'a_customer_' || i) FROM generate_series(1, 10) i) s" \
    >/dev/null || exit 2
p -d postgres -c "DROP DATABASE tenant_a" -c "CREATE DATABASE tenant_b" || exit 2
b=$(p -d tenant_b 2>&1 <<'SQL'
CREATE EXTENSION pg_ratelimit;
SELECT rate_limit_define('login', 10, '1 hour');
SELECT rate_limit_stats_reset();
SELECT pg_sleep(1.2);
SELECT allowed FROM rate_limit_request('k', 'login');
SELECT 'rows', string_agg(coalesce(limit_name, '<overflow>') || '=' || requests, ' ') FROM rate_limit_stats;
SQL
) || { echo "$b"; exit 2; }
echo "database B, after A was dropped and B reset: $(grep '^rows|' <<<"$b")"
psql -X -q -U tenant_c -d postgres -c "CREATE DATABASE tenant_c OID $a_oid" || exit 2
p -d tenant_c -c "CREATE EXTENSION pg_ratelimit" || exit 2
c=$(p -U tenant_c -d tenant_c -c "SELECT count(*) FROM rate_limit_stats WHERE limit_name LIKE 'a\_customer\_%'")
echo "database C (tenant_c's, OID $a_oid) sees $c of dropped database A's rows"
problems=()
grep -q '^rows|login=1$' <<<"$b" || problems+=("(a) database B's limit is counted in the overflow row after its reset")
[ "$c" = 0 ] || problems+=("(b) another role's database with A's OID shows $c of A's rows")
[ ${#problems[@]} -eq 0 ] && holds "a dropped database's statistics rows are freed"
reproduced "rows of a dropped database are never freed: ${problems[*]}"
