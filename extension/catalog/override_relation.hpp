// rate_limit_override (per-key tiers), checked before the extension reads or writes it with SQL as its
// owner, and its trigger.
//
// Refused with SQLSTATE 55000, like rate_limit_config (config_relation.hpp): a table that is not the
// extension's own (after a rename, a look-alike under the name), without the columns (limit_name text,
// key text, rate float8, capacity float8, max_reserved float8) or with one of them generated, triggers
// other than the extension's (they would run as the owner whenever rate_limit_override writes), rules,
// forced row-level security. Columns a DBA adds are harmless: the extension's SQL names its five. The
// result is cached until the table changes (CheckedTable, table_checks.hpp).
#pragma once

#include "postgres_headers.hpp"

namespace pg_ratelimit {

void override_relation_init();

// Opens, checks and closes the table (the lock stays); returns its OID.
Oid require_usable_override_table(Oid extension, Oid schema, LOCKMODE lockmode);

}  // namespace pg_ratelimit
