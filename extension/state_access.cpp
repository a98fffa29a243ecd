#include "state_access.hpp"

namespace pg_ratelimit {
namespace {

enum class AccessPath { auto_path, direct, sql };

const config_enum_entry ACCESS_PATHS[] = {
    {"auto", static_cast<int>(AccessPath::auto_path), false},
    {"direct", static_cast<int>(AccessPath::direct), false},
    {"sql", static_cast<int>(AccessPath::sql), false},
    {nullptr, 0, false},
};

int access_path_setting = static_cast<int>(AccessPath::auto_path);
bool on_yugabytedb = false;

// YugabyteDB builds its PostgreSQL with --with-extra-version=-YB-<version>, so its server_version (and
// version()) reads like "15.2-YB-2.25.0.0-b0": "-YB-" appears in no PostgreSQL version string. The
// setting is the server's own, fixed at build time, read once per backend. On YugabyteDB tables live in
// DocDB, not in heap pages, so only the SQL path can work there.
bool detect_yugabytedb() {
    const char *version = GetConfigOption("server_version", true, false);
    return version != nullptr && strstr(version, "-YB-") != nullptr;
}

}  // namespace

bool server_is_yugabytedb() { return on_yugabytedb; }

void state_access_init() {
    on_yugabytedb = detect_yugabytedb();
    DefineCustomEnumVariable(
        "pg_ratelimit.access_path", "How requests read and write rate_limit_state.",
        "auto (the default): direct on PostgreSQL with a heap table, sql otherwise (YugabyteDB, another table "
        "access method). direct: index and heap access without SQL, heap tables only. sql: prepared SQL "
        "statements only. Only superusers (or roles granted SET on it) may change it.",
        &access_path_setting, static_cast<int>(AccessPath::auto_path), ACCESS_PATHS, PGC_SUSET, 0, nullptr, nullptr,
        nullptr);
}

bool access_path_is_forced_direct() { return access_path_setting == static_cast<int>(AccessPath::direct); }

void state_access_open(const StateTarget &target, StateHandle *handle) {
    const auto setting = static_cast<AccessPath>(access_path_setting);
    const bool sql = setting == AccessPath::sql || (setting == AccessPath::auto_path && on_yugabytedb);
    handle->access = target.limit.storage == core::Storage::memory ? &memory_access
                     : sql                                         ? &sql_access
                                                                   : &direct_access;
    handle->target = target;
    // Under auto, the direct path hands over to the SQL path itself if the table is not a heap table.
    handle->access->open(handle);
}

void require_writable_transaction(const char *action) {
    if (XactReadOnly)
        ereport(ERROR,
                (errcode(ERRCODE_READ_ONLY_SQL_TRANSACTION), errmsg("cannot %s in a read-only transaction", action),
                 errhint("rate_limit_check works in read-only transactions.")));
    PreventCommandIfParallelMode("rate_limit_request");
}

}  // namespace pg_ratelimit
