#!/usr/bin/env bash
# Finding 15 (low): any login role can take its sessions off the access path the DBA configured, back to
# the built-in default `auto` (the direct path on PostgreSQL), by passing any value for
# pg_ratelimit.access_path in its connection options (PGOPTIONS). The library is loaded on the first call,
# after the connection's options: the option becomes a placeholder that replaces the configured value
# (database, role, file or command line), and when _PG_init's DefineCustomEnumVariable re-applies it, the
# PGC_SUSET check refuses it (a WARNING) and the setting falls back to its boot value, not to the DBA's.
# Here the DBA chose the SQL path for the database (say, for its serializable behaviour, see
# specs/serializable_absence_conflict.spec); the role's requests then read the hash lookup index.
# Expected: the role's sessions keep the configured path (e.g. preload the library, or restore the
# configured value in _PG_init when a placeholder was refused).
source "$(dirname "$0")/lib.sh"
setup_review review_path_user
q -c "ALTER DATABASE $REVIEW_DB SET pg_ratelimit.access_path = 'sql'"

probe() {  # the path the role's session reports, then the state table's indexes its request scanned
    psql -X -q -At -d "$REVIEW_DB" -U review_path_user 2>&1 <<'SQL'
BEGIN;
SELECT 'allowed', allowed FROM rate_limit_request('k');
SELECT 'path', current_setting('pg_ratelimit.access_path');
SELECT 'scanned', i.relname FROM pg_class i
 WHERE i.relname IN ('rate_limit_state_lookup', 'rate_limit_state_pkey') AND pg_stat_get_xact_numscans(i.oid) > 0;
COMMIT;
SQL
}
plain=$(probe)
echo "without options:"; echo "$plain"
grep -q '^path|sql$' <<<"$plain" || { echo "the database's setting was not applied"; exit 2; }
grep -q '^scanned|rate_limit_state_pkey$' <<<"$plain" || { echo "the SQL path was not seen reading the primary key"; exit 2; }
tampered=$(PGOPTIONS='-c pg_ratelimit.access_path=sql' probe)
echo "with PGOPTIONS='-c pg_ratelimit.access_path=sql':"; echo "$tampered"
if ! grep -q '^path|sql$' <<<"$tampered" && grep -q '^scanned|rate_limit_state_lookup$' <<<"$tampered"; then
    reproduced "a role's connection option (refused) resets the DBA's access path to '$(grep '^path|' <<<"$tampered" | cut -d'|' -f2)': its requests use the direct path"
fi
holds "connection options of an ordinary role do not change the configured access path"
