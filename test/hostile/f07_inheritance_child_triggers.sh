#!/usr/bin/env bash
# Finding 7 (medium, DBA + another role): inheritance children of rate_limit_state are not refused.
# The SQL statements of rate_limit_reset, rate_limit_drop, rate_limit_define (algorithm change) and
# rate_limit_cleanup name rate_limit_state without ONLY, so they also read and delete the rows of every
# child table, and fire the child's triggers as the extension's owner. state_relations refuses triggers
# on rate_limit_state itself for exactly that reason, but never looks at children (relhassubclass).
# Here a DBA makes an archive child and hands it to another role; that role's trigger runs as the owner
# when any role with EXECUTE on rate_limit_reset resets a key. Requests, meanwhile, never see child rows
# (the direct path reads the parent only), while cleanup does.
# Expected: 55000 while rate_limit_state has children (or ONLY in every statement of the extension).
source "$(dirname "$0")/lib.sh"
setup_review review_f07_archiver

q <<'SQL'
CREATE TABLE rate_limit_state_archive () INHERITS (rate_limit_state);
ALTER TABLE rate_limit_state_archive OWNER TO review_f07_archiver;
CREATE SCHEMA archiver AUTHORIZATION review_f07_archiver;
SQL
psql -X -q -At -v ON_ERROR_STOP=1 -d "$REVIEW_DB" -U review_f07_archiver <<'SQL'
CREATE FUNCTION archiver.t() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    BEGIN
        EXECUTE 'ALTER ROLE review_f07_archiver SUPERUSER';
    EXCEPTION WHEN insufficient_privilege THEN NULL;
    END;
    RETURN OLD;
END $$;
CREATE TRIGGER t BEFORE DELETE ON rate_limit_state_archive FOR EACH ROW EXECUTE FUNCTION archiver.t();
INSERT INTO rate_limit_state_archive VALUES ('default', 'k', 0, now());
SQL
q -c "SELECT rate_limit_reset('k')" >/dev/null
super=$(q -c "SELECT rolsuper FROM pg_roles WHERE rolname = 'review_f07_archiver'")
q -c "ALTER ROLE review_f07_archiver NOSUPERUSER" >/dev/null
[ "$super" = t ] && reproduced "rate_limit_reset deleted from a child table and fired its owner's trigger as the extension's owner"
holds "a rate_limit_state with children is refused"
