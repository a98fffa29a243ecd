// Checks shared by the extension's two tables (state_relations.hpp, config_relation.hpp): what any SQL
// the extension runs on them, as their owner, needs to be true. A table that fails is refused with
// SQLSTATE 55000 and a hint, before anything reads or writes it.
#pragma once

#include "postgres_headers.hpp"

namespace pg_ratelimit {

inline constexpr const char *RESTORE_HINT =
    "Undo the change to the table, or re-create the extension (DROP EXTENSION pg_ratelimit; CREATE EXTENSION "
    "pg_ratelimit) after saving rate_limit_config.";

[[noreturn]] void refuse_table(Relation relation, const char *problem, const char *hint);

// An ordinary table, a member of `extension` (not a look-alike a rename made room for), without rules or
// forced row-level security.
void check_extension_table(Relation relation, Oid extension);

// Refuses a table with a trigger whose function is not the extension's: it would run as the extension's
// owner whenever `writer` (the function that writes the table) does.
void refuse_foreign_triggers(Relation relation, Oid extension, const char *writer);

// Opens the extension's table `name` in `schema` (try_table_open: a concurrent DROP is reported, not an
// internal error), trying the cached OID first: its name and schema are checked, since the OID could only
// have been reused after the table was dropped. *cached is updated.
Relation open_extension_table(Oid schema, const char *name, LOCKMODE lockmode, Oid *cached);

}  // namespace pg_ratelimit
