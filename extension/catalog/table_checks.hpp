// Checks shared by the extension's tables (state_relations.hpp, config_relation.hpp, override_relation.hpp):
// what any SQL the extension runs on them, as their owner, needs to be true. A table that fails is refused with
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

// One of the extension's tables (one object per table, static), whose checks are remembered until the table
// changes: a relcache invalidation of it (ALTER TABLE, CREATE TRIGGER, a rename, ...) or another schema makes
// the next use check again. The lock taken keeps what was checked true until the transaction ends, since
// changing any of it needs a stronger lock.
class CheckedTable {
  public:
    using Check = void (*)(Relation table, Oid extension);  // refuses the table (refuse_table) or returns
    constexpr CheckedTable(const char *name, Check check) noexcept : name_(name), check_(check) {}

    void register_invalidations();  // once, when the library is loaded

    // Opens the table in `schema` with `lockmode` (kept until the transaction ends), checks it unless it
    // passed since its last invalidation, closes it and returns its OID.
    Oid require_usable(Oid extension, Oid schema, LOCKMODE lockmode);

  private:
    static void on_invalidation(Datum self, Oid relid);

    const char *name_;
    Check check_;
    Oid schema_ = InvalidOid;
    Oid relid_ = InvalidOid;
    bool checked_ = false;      // the table passed since its last invalidation
    uint64 invalidations_ = 0;  // of the table, to notice one arriving while it is being checked
};

}  // namespace pg_ratelimit
