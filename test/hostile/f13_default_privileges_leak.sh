#!/usr/bin/env bash
# Finding 13 (low-medium, careless DBA): default privileges of the role that runs CREATE EXTENSION apply
# to the extension's objects, and the install script only revokes from PUBLIC. A DBA who once ran the
# common "ALTER DEFAULT PRIVILEGES ... GRANT EXECUTE ON FUNCTIONS / ALL ON TABLES TO app" gives the
# application role rate_limit_define/drop/refund/reset/cleanup (SECURITY DEFINER) and direct writes on
# rate_limit_state and rate_limit_config, i.e. the role can lift its own limits, silently.
# Expected: after CREATE EXTENSION only the owner holds those rights (the install script can revoke
# from every grantee, e.g. a DO block over aclexplode(proacl)/relacl, or at least the README says to
# check \dp/\df+ after installing).
source "$(dirname "$0")/lib.sh"
setup_review review_f13_app
q -c "DROP EXTENSION pg_ratelimit" \
  -c "ALTER DEFAULT PRIVILEGES GRANT EXECUTE ON FUNCTIONS TO review_f13_app" \
  -c "ALTER DEFAULT PRIVILEGES GRANT ALL ON TABLES TO review_f13_app" \
  -c "CREATE EXTENSION pg_ratelimit"
# Every table, view, function and procedure of the extension: no ACL entry names the application role.
members=$(q -c "SELECT string_agg(coalesce(p.oid::regprocedure::text, c.oid::regclass::text), ', ')
                  FROM pg_depend d
                  LEFT JOIN pg_proc p ON d.classid = 'pg_proc'::regclass AND p.oid = d.objid
                  LEFT JOIN pg_class c ON d.classid = 'pg_class'::regclass AND c.oid = d.objid
                  CROSS JOIN LATERAL aclexplode(coalesce(p.proacl, c.relacl)) AS a
                 WHERE d.refclassid = 'pg_extension'::regclass AND d.deptype = 'e'
                   AND d.refobjid = (SELECT oid FROM pg_extension WHERE extname = 'pg_ratelimit')
                   AND a.grantee = 'review_f13_app'::regrole")
echo "members granted to the application role: ${members:-none}"
got=$(q -c "SELECT string_agg(proname, ',' ORDER BY proname) FROM pg_proc
            WHERE proname IN ('rate_limit_define', 'rate_limit_drop', 'rate_limit_refund', 'rate_limit_reset',
                              'rate_limit_cleanup')
              AND has_function_privilege('review_f13_app', oid, 'EXECUTE')")
tables=$(q -c "SELECT string_agg(relname, ',' ORDER BY relname) FROM pg_class
               WHERE relname IN ('rate_limit_state', 'rate_limit_config')
                 AND has_table_privilege('review_f13_app', oid, 'UPDATE')")
echo "executable by the application role: $got"
echo "writable by the application role: $tables"
lifted=$(psql -X -q -At -d "$REVIEW_DB" -U review_f13_app \
         -c "SELECT rate_limit_define('default', 1e12, '1 second')" -c "SELECT rate FROM rate_limit_config WHERE name = 'default'" 2>&1 | tail -n 1)
echo "the application role set the default limit's rate to: $lifted"
q -c "ALTER DEFAULT PRIVILEGES REVOKE ALL ON FUNCTIONS FROM review_f13_app" \
  -c "ALTER DEFAULT PRIVILEGES REVOKE ALL ON TABLES FROM review_f13_app" -c "DROP EXTENSION pg_ratelimit"
[ -n "$members" ] && reproduced "default privileges gave the application role rights on $members"
[ -n "$got" ] && reproduced "default privileges gave the application role $got and writes on $tables"
holds "only the owner holds the administrative functions"
