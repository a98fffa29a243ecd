// rate_limit_override_changed (AFTER ... FOR EACH STATEMENT on rate_limit_override, and FOR EACH ROW for
// logical replication's apply worker, which fires row triggers only): queues an
// invalidation of the table's relcache entry, which every backend's override cache (override_cache.hpp)
// turns into dropping what it cached. PostgreSQL delivers it to this backend at the next command (and
// again on rollback) and to every other backend when the change commits. Created ENABLE ALWAYS, like
// rate_limit_config's triggers (config_triggers.cpp), so that it fires under session_replication_role =
// replica too.
#include "cpp_boundary.hpp"

namespace pg_ratelimit {
namespace {

Datum override_changed_body(FunctionCallInfo fcinfo) {
    if (!CALLED_AS_TRIGGER(fcinfo))
        ereport(ERROR, (errcode(ERRCODE_E_R_I_E_TRIGGER_PROTOCOL_VIOLATED),
                        errmsg("rate_limit_override_changed() was not called as a trigger"),
                        errhint("It is a trigger function of pg_ratelimit's own rate_limit_override.")));
    const auto *trigger = reinterpret_cast<const TriggerData *>(fcinfo->context);
    const Relation relation = trigger->tg_relation;
    const Oid extension = getExtensionOfObject(ProcedureRelationId, fcinfo->flinfo->fn_oid);
    // Only on the extension's own table: anywhere else an invalidation would be harmless, but the
    // function is not meant for other tables.
    if (!OidIsValid(extension) || getExtensionOfObject(RelationRelationId, RelationGetRelid(relation)) != extension ||
        strcmp(RelationGetRelationName(relation), "rate_limit_override") != 0)
        ereport(ERROR, (errcode(ERRCODE_E_R_I_E_TRIGGER_PROTOCOL_VIOLATED),
                        errmsg("rate_limit_override_changed() fired on another table than the extension's "
                               "rate_limit_override"),
                        errhint("It is a trigger function of pg_ratelimit's own rate_limit_override.")));
    CacheInvalidateRelcacheByRelid(RelationGetRelid(relation));
    return PointerGetDatum(nullptr);
}

}  // namespace
}  // namespace pg_ratelimit

PG_RATELIMIT_SQL_FUNCTION(rate_limit_override_changed, pg_ratelimit::override_changed_body)
