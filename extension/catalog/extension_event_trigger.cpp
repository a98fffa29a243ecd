// rate_limit_extension_changed: an event trigger on ALTER EXTENSION (ddl_command_end).
//
// Every backend caches what it checked about the extension's tables, among it that they are members of
// the extension (state_relations.hpp, config_relation.hpp), until a relcache invalidation of the table.
// ALTER EXTENSION ... ADD / DROP changes membership in pg_depend only, which invalidates nothing: this
// trigger invalidates the whole relcache (ALTER EXTENSION is rare), so every session checks again.
#include "cpp_boundary.hpp"

namespace pg_ratelimit {
namespace {

Datum extension_changed_body(FunctionCallInfo fcinfo) {
    if (!CALLED_AS_EVENT_TRIGGER(fcinfo))
        ereport(ERROR, (errcode(ERRCODE_E_R_I_E_TRIGGER_PROTOCOL_VIOLATED),
                        errmsg("rate_limit_extension_changed() was not called as an event trigger")));
    CacheInvalidateRelcacheAll();
    PG_RETURN_VOID();
}

}  // namespace
}  // namespace pg_ratelimit

PG_RATELIMIT_SQL_FUNCTION(rate_limit_extension_changed, pg_ratelimit::extension_changed_body)
