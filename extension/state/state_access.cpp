#include "state/state_access.hpp"

#include "message_text.hpp"

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
bool access_path_refused = false;  // a value set before the library was loaded was not applied
const char *refused_value = nullptr;

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
    // A value set before the library was loaded (postgresql.conf, ALTER ROLE / DATABASE SET, a
    // connection's options) waits in a placeholder that defining the setting applies, with the privileges
    // of whoever set it. A refused value (say, an ordinary role's connection option) leaves not the
    // value the DBA configured but the default: the session is then refused instead (see
    // state_access_open), so that nobody can pick a path the DBA did not configure.
    const char *placeholder = GetConfigOption("pg_ratelimit.access_path", true, false);
    char *wanted = placeholder != nullptr ? MemoryContextStrdup(TopMemoryContext, placeholder) : nullptr;
    DefineCustomEnumVariable(
        "pg_ratelimit.access_path", "How requests read and write rate_limit_state.",
        "auto (the default): direct on PostgreSQL with a heap table, sql otherwise (YugabyteDB, another table "
        "access method). direct: index and heap access without SQL, heap tables only. sql: prepared SQL "
        "statements only. Only superusers (or roles granted SET on it) may change it.",
        &access_path_setting, static_cast<int>(AccessPath::auto_path), ACCESS_PATHS, PGC_SUSET, 0, nullptr, nullptr,
        nullptr);
    if (wanted != nullptr) {
        const char *applied = GetConfigOption("pg_ratelimit.access_path", false, false);
        access_path_refused = pg_strcasecmp(wanted, applied) != 0;
        if (access_path_refused) refused_value = wanted;
    }
}

bool access_path_is_forced_direct() { return access_path_setting == static_cast<int>(AccessPath::direct); }

void state_access_open(const StateTarget &target, StateHandle *handle) {
    if (access_path_refused)
        ereport(ERROR, (errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
                        errmsg("pg_ratelimit.access_path = '%s' was set for this session but not applied",
                               clipped_text(refused_value)),
                        errdetail("Only superusers, or roles granted SET on it, may set pg_ratelimit.access_path; "
                                  "the value configured for the server was lost with it."),
                        errhint("Reconnect without setting pg_ratelimit.access_path. Preloading the library "
                                "(shared_preload_libraries) refuses such a setting at connection time.")));
    // An unlogged table is empty on a standby (its data is never replicated), and reading it there fails
    // with an error about a missing file: say what is wrong instead.
    if (target.limit.storage == core::Storage::unlogged && RecoveryInProgress())
        ereport(ERROR,
                (errcode(ERRCODE_READ_ONLY_SQL_TRANSACTION), errmsg("unlogged rate limits cannot be used on a standby"),
                 errdetail("Their state is in an unlogged table, which is not replicated."),
                 errhint("Serve standbys' traffic with limits defined with storage => 'memory'.")));
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
