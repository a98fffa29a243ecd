// rate_limit_cleanup(limit_name DEFAULT NULL): deletes the rows (or memory entries) of keys that have
// refilled to full capacity (a key without a row is full, so nothing changes for anyone), and, for all
// limits, rows left behind by limits deleted from rate_limit_config directly, or left in the table of a
// storage the limit no longer has. Returns how many rows and entries it deleted.
//
// Meant for a periodic job (pg_cron, say), at READ COMMITTED. It reads each limit's keys through a cursor
// and deletes a row only if it still holds the two numbers that were judged full (compare-and-set, as
// requests write), so it never undoes a concurrent request, and only if the key was full already five
// minutes ago (core::CLEANUP_MARGIN), so that a server clock stepped back by up to that much mints nothing.
//
// Concurrent definitions: before it reads a limit's definition, cleanup takes the limit's lock in share
// mode (limit_lock.hpp) and keeps it, so a redefinition or drop of that limit waits until the cleanup
// commits, and one that committed before is seen: cleanup reads the definition with the latest snapshot.
// A limit dropped meanwhile is skipped, and so is one whose redefinition or drop is in progress (cleanup
// does not wait for the lock). Under REPEATABLE READ or SERIALIZABLE a limit whose definition
// changed since the transaction's snapshot is skipped too (its rows, as that snapshot shows them, may be
// gone); deleting a row that a concurrent request is updating raises 40001 there, as any DELETE would.
#include "call_context.hpp"
#include "clock.hpp"
#include "config_relation.hpp"
#include "core/algorithms.hpp"
#include "core/shards.hpp"
#include "cpp_boundary.hpp"
#include "extension_sql.hpp"
#include "limit_cache.hpp"
#include "limit_lock.hpp"
#include "memory_state.hpp"
#include "override_hooks.hpp"
#include "state_relations.hpp"

namespace pg_ratelimit {
namespace {

constexpr long CURSOR_BATCH = 1000;

bool same_limit(const core::Limit &a, const core::Limit &b) {
    return a.algorithm == b.algorithm && a.rate == b.rate && a.period == b.period && a.capacity == b.capacity &&
           a.max_reserved == b.max_reserved && a.has_start == b.has_start && a.start == b.start &&
           a.shards == b.shards && a.storage == b.storage && a.epoch == b.epoch && a.calendar.unit == b.calendar.unit &&
           a.calendar.count == b.calendar.count && a.calendar.zone == b.calendar.zone;
}

int64 delete_full_keys(const core::Limit &definition, Datum limit_name, const OverrideSet *overrides) {
    // The table's name is one of two constants; the values travel as parameters.
    const char *table =
        state_table_name(definition.storage == core::Storage::unlogged ? StateTable::unlogged : StateTable::logged);
    Oid delete_types[] = {TEXTOID, TEXTOID, INT2OID, FLOAT8OID, TIMESTAMPTZOID};
    SPIPlanPtr delete_if_unchanged = SPI_prepare(
        psprintf("DELETE FROM ONLY %s WHERE limit_name OPERATOR(pg_catalog.=) $1 AND key OPERATOR(pg_catalog.=) $2"
                 " AND shard OPERATOR(pg_catalog.=) $3 AND value OPERATOR(pg_catalog.=) $4"
                 " AND ts OPERATOR(pg_catalog.=) $5",
                 table),
        5, delete_types);
    if (delete_if_unchanged == nullptr) elog(ERROR, "pg_ratelimit: SPI_prepare failed for cleanup");

    Oid name_type[] = {TEXTOID};
    Datum name_value[] = {limit_name};
    Portal keys = SPI_cursor_open_with_args(
        nullptr,
        psprintf("SELECT key, shard, value, ts FROM ONLY %s WHERE limit_name OPERATOR(pg_catalog.=) $1", table), 1,
        name_type, name_value, nullptr, true, 0);

    int64 deleted = 0;
    for (;;) {
        SPI_cursor_fetch(keys, true, CURSOR_BATCH);
        SPITupleTable *batch = SPI_tuptable;  // the deletes below replace SPI_tuptable
        const uint64 rows = SPI_processed;
        if (rows == 0) break;
        for (uint64 i = 0; i < rows; ++i) {
            bool isnull = false;
            const Datum key = SPI_getbinval(batch->vals[i], batch->tupdesc, 1, &isnull);
            const Datum shard = SPI_getbinval(batch->vals[i], batch->tupdesc, 2, &isnull);
            const Datum value = SPI_getbinval(batch->vals[i], batch->tupdesc, 3, &isnull);
            const Datum ts = SPI_getbinval(batch->vals[i], batch->tupdesc, 4, &isnull);
            const text *key_text = DatumGetTextPP(key);
            // Each row is one shard's, of the key's own limit (its override, if it has one).
            const core::Limit limit = core::shard_limit(
                override_set_limit(overrides, definition, VARDATA_ANY(key_text), VARSIZE_ANY_EXHDR(key_text)));
            const core::Micros origin = core::key_origin(limit, VARDATA_ANY(key_text), VARSIZE_ANY_EXHDR(key_text));
            const core::State stored{DatumGetFloat8(value), DatumGetTimestampTz(ts)};
            // Full already CLEANUP_MARGIN ago (core/algorithms.hpp): a clock stepped back by less than that
            // can then never reach behind the deleted row's time.
            if (!core::is_full(limit, stored, clock_now() - core::CLEANUP_MARGIN, origin)) continue;
            Datum args[] = {limit_name, key, shard, value, ts};
            if (SPI_execute_plan(delete_if_unchanged, args, nullptr, false, 0) != SPI_OK_DELETE)
                elog(ERROR, "pg_ratelimit: cleanup delete failed");
            deleted += static_cast<int64>(SPI_processed);
        }
        SPI_freetuptable(batch);
    }
    SPI_cursor_close(keys);
    SPI_freeplan(delete_if_unchanged);
    return deleted;
}

// Cleans one limit up, holding its lock; 0 if it does not exist (any more), or if a redefinition or drop
// of it is in progress (cleanup never waits for one: the next run takes care of that limit, and a
// transaction redefining several limits can never deadlock with cleanup).
int64 cleanup_limit(const CallContext &context, Datum limit_name) {
    if (!lock_limit(DatumGetTextPP(limit_name), ShareLock, false)) return 0;
    core::Limit latest;
    if (!limit_read(limit_name, GetLatestSnapshot(), &latest)) return 0;
    if (IsolationUsesXactSnapshot()) {
        core::Limit seen;
        if (!limit_read(limit_name, GetTransactionSnapshot(), &seen) || !same_limit(seen, latest)) return 0;
    }
    if (latest.storage == core::Storage::memory) return memory_state_sweep(DatumGetTextPP(limit_name), latest);
    return delete_full_keys(latest, limit_name, overrides_of(context, limit_name));
}

Datum cleanup_body(FunctionCallInfo fcinfo) {
    const CallContext context = call_context(fcinfo, false);
    // Checked first: the deletes below must not fire triggers as the owner (state_relations.hpp).
    for (const StateTable table : STATE_TABLES) require_usable_state_table(context.extension, context.schema, table);
    require_usable_config_table(context.extension, context.schema, AccessShareLock);
    const int sql_token = extension_sql_begin(context.schema);

    int64 deleted = 0;
    if (!PG_ARGISNULL(0)) {
        const text *name = PG_GETARG_TEXT_PP(0);
        (void)limit_lookup(context.extension, context.schema,
                           name);  // an unknown name is an error; one dropped meanwhile is not
        deleted = cleanup_limit(context, PointerGetDatum(name));
    } else {
        extension_sql_run("SELECT name FROM ONLY rate_limit_config ORDER BY name", 0, nullptr, nullptr, nullptr, true,
                          SPI_OK_SELECT);
        SPITupleTable *names = SPI_tuptable;
        const uint64 count = SPI_processed;
        for (uint64 i = 0; i < count; ++i) {
            bool isnull = false;
            deleted += cleanup_limit(context, SPI_getbinval(names->vals[i], names->tupdesc, 1, &isnull));
        }
        // Rows of limits that no longer exist, or whose storage is now another (changed in the table directly).
        for (const StateTable table : STATE_TABLES) {
            extension_sql_run(psprintf("DELETE FROM ONLY %s AS s WHERE NOT EXISTS (SELECT FROM ONLY rate_limit_config"
                                       " AS c WHERE c.name OPERATOR(pg_catalog.=) s.limit_name"
                                       " AND c.storage OPERATOR(pg_catalog.=) '%s')",
                                       state_table_name(table), table == StateTable::logged ? "durable" : "unlogged"),
                              0, nullptr, nullptr, nullptr, false, SPI_OK_DELETE);
            deleted += static_cast<int64>(SPI_processed);
        }
    }
    extension_sql_end(sql_token);
    PG_RETURN_INT64(deleted);
}

}  // namespace
}  // namespace pg_ratelimit

PG_RATELIMIT_SQL_FUNCTION(rate_limit_cleanup, pg_ratelimit::cleanup_body)
