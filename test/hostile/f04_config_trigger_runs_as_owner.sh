#!/usr/bin/env bash
# Finding 4 (medium): triggers (and rules) on rate_limit_config run as the extension's owner.
# rate_limit_state refuses triggers for exactly that reason ("triggers on it would run as the
# extension's owner"), rate_limit_config does not. A role that a DBA let manage limits (EXECUTE on
# rate_limit_define, as sql/privileges.sql shows) and that has TRIGGER on rate_limit_config (or owns
# it) gets the owner's rights by defining a limit: its trigger runs inside the SECURITY DEFINER INSERT.
# Without the extension, TRIGGER on a table only ever runs code as the roles that write that table;
# here every write is the owner's.
# Expected: define/drop refuse (55000) while rate_limit_config has triggers or rules other than the
# extension's own two, as state_relations does for rate_limit_state.
source "$(dirname "$0")/lib.sh"
setup_review review_f04_manager

q <<'SQL'
GRANT EXECUTE ON FUNCTION rate_limit_define
    TO review_f04_manager;
GRANT TRIGGER ON rate_limit_config TO review_f04_manager;
CREATE SCHEMA manager AUTHORIZATION review_f04_manager;
SQL
psql -X -q -At -v ON_ERROR_STOP=1 -d "$REVIEW_DB" -U review_f04_manager <<'SQL'
CREATE FUNCTION manager.t() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    BEGIN
        EXECUTE 'ALTER ROLE review_f04_manager SUPERUSER';
    EXCEPTION WHEN insufficient_privilege THEN NULL;
    END;
    RETURN NULL;
END $$;
CREATE TRIGGER audit AFTER INSERT OR UPDATE ON rate_limit_config
    FOR EACH STATEMENT EXECUTE FUNCTION manager.t();
SELECT rate_limit_define('api', 10, '1 second');
SQL
super=$(q -c "SELECT rolsuper FROM pg_roles WHERE rolname = 'review_f04_manager'")
q -c "ALTER ROLE review_f04_manager NOSUPERUSER" >/dev/null
[ "$super" = t ] && reproduced "a trigger on rate_limit_config ran as the extension's owner: review_f04_manager became superuser"
holds "rate_limit_define refused to write rate_limit_config while it has a foreign trigger"
