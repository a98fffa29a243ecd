// The triggers of rate_limit_config.
//
// rate_limit_config_changed (AFTER ... FOR EACH STATEMENT): queues an invalidation of the table's
// relcache entry, which every backend's limit cache turns into dropping its cached limits (see
// limit_cache.hpp). PostgreSQL delivers it to this backend at the next command and to every other backend
// when the change commits.
//
// rate_limit_config_row (BEFORE INSERT OR UPDATE OR DELETE FOR EACH ROW): takes the changed limits'
// locks (limit_lock.hpp), and lets pg_restore bring back a redefined 'default': CREATE EXTENSION inserts
// the shipped row, then the dump's copy of the table inserts 'default' again; an INSERT of 'default' over
// the shipped row, untouched, replaces it instead of failing. Written in C rather than PL/pgSQL so that
// its UPDATE runs in the table's own schema by OID (extension_sql.hpp): a PL/pgSQL body would name the
// schema, and after a rename of the schema that name could lead to somebody else's table, with the
// caller's rights (the extension's owner, when rate_limit_define inserts).
//
// Both are created ENABLE ALWAYS: they fire under session_replication_role = replica too (a logical
// replication subscriber applying changes of rate_limit_config, pg_restore with a replica role), since
// without the invalidation other sessions would keep deciding with the old definitions. (ALTER TABLE
// ... DISABLE TRIGGER, and pg_restore --disable-triggers, still switch them off: don't.)
#include <initializer_list>

#include "catalog/limit_cache.hpp"
#include "catalog/limit_kind.hpp"
#include "catalog/table_checks.hpp"
#include "catalog/written_limits.hpp"
#include "cpp_boundary.hpp"
#include "extension_sql.hpp"
#include "state/memory_state.hpp"

namespace pg_ratelimit {
namespace {

// name, algorithm, rate, period, capacity, max_reserved, start, shards, storage, epoch, jitter, time_zone, shadow
constexpr int CONFIG_COLUMNS = 13;
constexpr int STORAGE_COLUMN = 9;

[[noreturn]] void misuse(const char *name, const char *how) {
    ereport(ERROR, (errcode(ERRCODE_E_R_I_E_TRIGGER_PROTOCOL_VIOLATED), errmsg("%s %s", name, how),
                    errhint("It is a trigger function of pg_ratelimit's own rate_limit_config.")));
    pg_unreachable();
}

// The trigger data, after checking that the function fires as the install script attached it: on the
// extension's own rate_limit_config (the extension of the function itself), whose first column is the
// name. Any other use is refused: the functions are not meant for other tables, and the row trigger
// reads and locks by the first column.
const TriggerData *trigger_data(FunctionCallInfo fcinfo, const char *name, bool before_row) {
    if (!CALLED_AS_TRIGGER(fcinfo)) misuse(name, "was not called as a trigger");
    const auto *trigger = reinterpret_cast<const TriggerData *>(fcinfo->context);
    const Relation relation = trigger->tg_relation;
    const Oid extension = getExtensionOfObject(ProcedureRelationId, fcinfo->flinfo->fn_oid);
    if (!OidIsValid(extension) || getExtensionOfObject(RelationRelationId, RelationGetRelid(relation)) != extension ||
        strcmp(RelationGetRelationName(relation), "rate_limit_config") != 0 ||
        RelationGetDescr(relation)->natts != CONFIG_COLUMNS ||
        TupleDescAttr(RelationGetDescr(relation), 0)->atttypid != TEXTOID)
        misuse(name, "fired on another table than the extension's rate_limit_config");
    const TriggerEvent event = trigger->tg_event;
    if (before_row && (!TRIGGER_FIRED_BEFORE(event) || !TRIGGER_FIRED_FOR_ROW(event)))
        misuse(name, "must fire BEFORE ... FOR EACH ROW");
    return trigger;
}

Datum config_changed_body(FunctionCallInfo fcinfo) {
    const TriggerData *trigger = trigger_data(fcinfo, "rate_limit_config_changed()", false);
    CacheInvalidateRelcacheByRelid(RelationGetRelid(trigger->tg_relation));
    return PointerGetDatum(nullptr);
}

const text *name_of(const TriggerData *trigger, HeapTuple row) {
    bool isnull = false;
    const Datum name = heap_getattr(row, 1, RelationGetDescr(trigger->tg_relation), &isnull);
    return isnull ? nullptr : DatumGetTextPP(name);
}

// The pg_restore case: an INSERT of 'default' while the row CREATE EXTENSION shipped is still exactly as
// shipped replaces that row (see the top of the file) and returns true. Any other INSERT of an existing
// name fails with a unique violation (or does nothing under ON CONFLICT DO NOTHING), as on any table.
bool replaces_shipped_default(const TriggerData *trigger, HeapTuple row) {
    if (strcmp(text_to_cstring(name_of(trigger, row)), "default") != 0) return false;
    const TupleDesc desc = RelationGetDescr(trigger->tg_relation);
    Datum values[CONFIG_COLUMNS];
    char nulls[CONFIG_COLUMNS];
    Oid types[CONFIG_COLUMNS];
    for (int i = 0; i < CONFIG_COLUMNS; ++i) {
        bool isnull = false;
        values[i] = heap_getattr(row, i + 1, desc, &isnull);
        nulls[i] = isnull ? 'n' : ' ';
        types[i] = TupleDescAttr(desc, i)->atttypid;
    }
    const int sql_token = extension_sql_begin(RelationGetNamespace(trigger->tg_relation));
    extension_sql_run(
        "UPDATE ONLY rate_limit_config SET algorithm = $2, rate = $3, period = $4, capacity = $5,"
        " max_reserved = $6, start = $7, shards = $8, storage = $9, epoch = $10, jitter = $11, time_zone = $12,"
        " shadow = $13"
        " WHERE name OPERATOR(pg_catalog.=) $1"
        " AND algorithm OPERATOR(pg_catalog.=) 'token_bucket' AND rate OPERATOR(pg_catalog.=) 120"
        " AND period OPERATOR(pg_catalog.=) '1 minute' AND capacity OPERATOR(pg_catalog.=) 120"
        " AND max_reserved IS NULL AND start IS NULL AND shards OPERATOR(pg_catalog.=) 1"
        " AND storage OPERATOR(pg_catalog.=) 'durable' AND epoch OPERATOR(pg_catalog.=) 0"
        " AND jitter OPERATOR(pg_catalog.=) '0' AND time_zone IS NULL AND NOT shadow",
        CONFIG_COLUMNS, types, values, nulls, false, SPI_OK_UPDATE);
    const bool merged = SPI_processed > 0;
    extension_sql_end(sql_token);
    return merged;
}

// Whether a row's column (1-based) is NULL or equals the same column of another row, as text.
bool same_column(const TriggerData *trigger, HeapTuple a, HeapTuple b, int column) {
    const TupleDesc desc = RelationGetDescr(trigger->tg_relation);
    const char *x = SPI_getvalue(a, desc, column);
    const char *y = SPI_getvalue(b, desc, column);
    return (x == nullptr && y == nullptr) || (x != nullptr && y != nullptr && strcmp(x, y) == 0);
}

bool is_memory_limit(const TriggerData *trigger, HeapTuple row) {
    const char *storage = SPI_getvalue(row, RelationGetDescr(trigger->tg_relation), STORAGE_COLUMN);
    return storage != nullptr && strcmp(storage, "memory") == 0;
}

// Whether the algorithm stays, or changes between two whose keys keep their balance (token bucket and
// GCRA, core/rescale.hpp): rate_limit_define carries a memory limit's keys over at commit.
bool algorithm_carries_over(const TriggerData *trigger, HeapTuple old_row, HeapTuple new_row) {
    constexpr int ALGORITHM = 2;
    if (same_column(trigger, old_row, new_row, ALGORITHM)) return true;
    const auto balance_kept = [&](HeapTuple row) {
        const char *algorithm = SPI_getvalue(row, RelationGetDescr(trigger->tg_relation), ALGORITHM);
        return algorithm != nullptr && (strcmp(algorithm, "token_bucket") == 0 || strcmp(algorithm, "gcra") == 0);
    };
    return balance_kept(old_row) && balance_kept(new_row);
}

// A memory limit's entries go when the change commits, as a table limit's rows go with the change itself
// (rate_limit_define, rate_limit_drop): when the limit is deleted or renamed, or its algorithm (but for
// token bucket <-> GCRA), shards or storage change. (Not on INSERT: rate_limit_define's upsert fires the
// BEFORE INSERT trigger for a redefinition too; what a dropped limit left was forgotten when its drop
// committed.) An entry made under another algorithm or epoch than the limit's counts as absent anyway
// (core::memory_definition): an UPDATE by hand from token bucket to GCRA starts the keys afresh.
// Otherwise, an UPDATE keeps each entry's numbers, and when it is full again is recomputed at commit under
// the new numbers (memory_state_refresh_at_commit): left as it was, cleanup would delete, and eviction
// drop, a key full under the old numbers that still owes units under the new ones.
void forget_memory_state(const TriggerData *trigger, HeapTuple old_row, HeapTuple new_row) {
    constexpr int NAME = 1;
    constexpr int SHARDS = 8;
    if (old_row == nullptr || name_of(trigger, old_row) == nullptr || !is_memory_limit(trigger, old_row)) return;
    if (new_row == nullptr || !same_column(trigger, old_row, new_row, NAME) ||
        !algorithm_carries_over(trigger, old_row, new_row) || !same_column(trigger, old_row, new_row, SHARDS) ||
        !same_column(trigger, old_row, new_row, STORAGE_COLUMN)) {
        memory_state_forget_at_commit(name_of(trigger, old_row));
        return;
    }
    const TupleDesc desc = RelationGetDescr(trigger->tg_relation);
    if (limit_row_complete(old_row, desc, 2) && limit_row_complete(new_row, desc, 2))
        memory_state_refresh_at_commit(name_of(trigger, new_row), limit_from_row(old_row, desc, 2),
                                       limit_from_row(new_row, desc, 2));
}

// A concurrency limit keeps its kind and its period (limit_kind.hpp), whoever writes the row: an UPDATE by
// hand, logical replication, rate_limit_define (which checks first, for a message without this context).
void require_concurrency_row_kept(const TriggerData *trigger, HeapTuple old_row, HeapTuple new_row) {
    const TupleDesc desc = RelationGetDescr(trigger->tg_relation);
    if (old_row == nullptr || new_row == nullptr || !limit_row_complete(old_row, desc, 2) ||
        !same_column(trigger, old_row, new_row, 1))
        return;
    require_concurrency_kept(limit_from_row(old_row, desc, 2), limit_from_row(new_row, desc, 2),
                             text_to_cstring(name_of(trigger, old_row)));
}

Datum config_row_body(FunctionCallInfo fcinfo) {
    const TriggerData *trigger = trigger_data(fcinfo, "rate_limit_config_row()", true);
    // Logical replication's apply worker fires row triggers only, never the statement trigger above: the
    // cached limits of a subscriber's sessions are dropped from here too (duplicates of one command's
    // invalidation are merged).
    CacheInvalidateRelcacheByRelid(RelationGetRelid(trigger->tg_relation));
    const TriggerEvent event = trigger->tg_event;
    HeapTuple old_row = TRIGGER_FIRED_BY_INSERT(event) ? nullptr : trigger->tg_trigtuple;
    HeapTuple new_row = TRIGGER_FIRED_BY_INSERT(event)   ? trigger->tg_trigtuple
                        : TRIGGER_FIRED_BY_UPDATE(event) ? trigger->tg_newtuple
                                                         : nullptr;
    // NULL names are left for the table's NOT NULL constraint to refuse.
    for (HeapTuple row : {old_row, new_row})
        if (row != nullptr && name_of(trigger, row) != nullptr) lock_limit_for_change(name_of(trigger, row));
    forget_memory_state(trigger, old_row, new_row);
    // A row no call could use is refused here, with the error rate_limit_define gives (an unknown time zone,
    // a calendar period of months and days, a start with a calendar...: what the table's CHECKs cannot
    // say), rather than failing every call on the limit, and rate_limit_cleanup with them.
    if (new_row != nullptr && name_of(trigger, new_row) != nullptr) {
        require_valid_limit(limit_from_row(new_row, RelationGetDescr(trigger->tg_relation), 2));
        require_concurrency_row_kept(trigger, old_row, new_row);
    }
    if (TRIGGER_FIRED_BY_INSERT(event) && name_of(trigger, new_row) != nullptr &&
        replaces_shipped_default(trigger, new_row))
        return PointerGetDatum(nullptr);  // the shipped row now holds the new values: skip the insert
    return PointerGetDatum(new_row != nullptr ? new_row : old_row);
}

}  // namespace
}  // namespace pg_ratelimit

PG_RATELIMIT_SQL_FUNCTION(rate_limit_config_changed, pg_ratelimit::config_changed_body)
PG_RATELIMIT_SQL_FUNCTION(rate_limit_config_row, pg_ratelimit::config_row_body)
