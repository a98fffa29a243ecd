// rate_limit_cleanup(limit_name DEFAULT NULL): deletes the rows of keys that have refilled to full
// capacity (a key without a row is full, so nothing changes for anyone), and, for all limits, rows left
// behind by limits deleted from rate_limit_config directly. Returns how many rows it deleted.
//
// Meant for a periodic job (pg_cron, say). It reads each limit's keys through a cursor and deletes a
// row only if it still holds the two numbers that were judged full (compare-and-set, as requests
// write), so it never undoes a concurrent request.
#include "call_context.hpp"
#include "clock.hpp"
#include "core/algorithms.hpp"
#include "cpp_boundary.hpp"
#include "limit_cache.hpp"
#include "statements.hpp"

namespace pg_ratelimit {
namespace {

constexpr long CURSOR_BATCH = 1000;

int64 cleanup_limit(Oid schema, Datum limit_name) {
    const core::Limit limit = limit_lookup(schema, DatumGetTextPP(limit_name));
    const char *state = qualified_table(schema, "rate_limit_state");

    Oid delete_types[] = {TEXTOID, TEXTOID, FLOAT8OID, TIMESTAMPTZOID};
    SPIPlanPtr delete_if_unchanged =
        SPI_prepare(psprintf("DELETE FROM %s WHERE limit_name OPERATOR(pg_catalog.=) $1"
                             " AND key OPERATOR(pg_catalog.=) $2 AND value OPERATOR(pg_catalog.=) $3"
                             " AND ts OPERATOR(pg_catalog.=) $4",
                             state),
                    4, delete_types);
    if (delete_if_unchanged == nullptr) elog(ERROR, "pg_ratelimit: SPI_prepare failed for cleanup");

    Oid name_type[] = {TEXTOID};
    Datum name_value[] = {limit_name};
    Portal keys = SPI_cursor_open_with_args(
        nullptr, psprintf("SELECT key, value, ts FROM %s WHERE limit_name OPERATOR(pg_catalog.=) $1", state), 1,
        name_type, name_value, nullptr, true, 0);

    int64 deleted = 0;
    const bool keyed_grid = limit.algorithm == core::Algorithm::fixed_window && !limit.has_start;
    for (;;) {
        SPI_cursor_fetch(keys, true, CURSOR_BATCH);
        SPITupleTable *batch = SPI_tuptable;  // the deletes below replace SPI_tuptable
        const uint64 rows = SPI_processed;
        if (rows == 0) break;
        for (uint64 i = 0; i < rows; ++i) {
            bool isnull = false;
            const Datum key = SPI_getbinval(batch->vals[i], batch->tupdesc, 1, &isnull);
            const Datum value = SPI_getbinval(batch->vals[i], batch->tupdesc, 2, &isnull);
            const Datum ts = SPI_getbinval(batch->vals[i], batch->tupdesc, 3, &isnull);
            const text *key_text = DatumGetTextPP(key);
            const core::Micros origin = core::window_origin(
                limit, keyed_grid ? core::key_hash(VARDATA_ANY(key_text), VARSIZE_ANY_EXHDR(key_text)) : 0);
            const core::State stored{DatumGetFloat8(value), DatumGetTimestampTz(ts)};
            if (!core::is_full(limit, stored, clock_now(), origin)) continue;
            Datum args[] = {limit_name, key, value, ts};
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

Datum cleanup_body(FunctionCallInfo fcinfo) {
    const CallContext context = call_context(fcinfo, false);
    if (SPI_connect() != SPI_OK_CONNECT) elog(ERROR, "pg_ratelimit: SPI_connect failed");
    const char *config = qualified_table(context.schema, "rate_limit_config");
    const char *state = qualified_table(context.schema, "rate_limit_state");

    int64 deleted = 0;
    if (!PG_ARGISNULL(0)) {
        deleted = cleanup_limit(context.schema, PointerGetDatum(PG_GETARG_TEXT_PP(0)));
    } else {
        if (SPI_execute(psprintf("SELECT name FROM %s ORDER BY name", config), true, 0) != SPI_OK_SELECT)
            elog(ERROR, "pg_ratelimit: reading rate_limit_config failed");
        SPITupleTable *names = SPI_tuptable;
        const uint64 count = SPI_processed;
        for (uint64 i = 0; i < count; ++i) {
            bool isnull = false;
            deleted += cleanup_limit(context.schema, SPI_getbinval(names->vals[i], names->tupdesc, 1, &isnull));
        }
        if (SPI_execute(psprintf("DELETE FROM %s AS s WHERE NOT EXISTS (SELECT FROM %s AS c"
                                 " WHERE c.name OPERATOR(pg_catalog.=) s.limit_name)",
                                 state, config),
                        false, 0) != SPI_OK_DELETE)
            elog(ERROR, "pg_ratelimit: deleting orphaned state failed");
        deleted += static_cast<int64>(SPI_processed);
    }
    SPI_finish();
    PG_RETURN_INT64(deleted);
}

}  // namespace
}  // namespace pg_ratelimit

PG_RATELIMIT_SQL_FUNCTION(rate_limit_cleanup, pg_ratelimit::cleanup_body)
