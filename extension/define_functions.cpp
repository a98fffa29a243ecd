// rate_limit_define and rate_limit_drop: the named limits in rate_limit_config.
//
// Cold paths, so they run one-off SQL in the extension's schema (extension_sql.hpp; parameters only,
// never spliced input). Every argument is validated before the first write. The table's row trigger takes
// the limit's lock (limit_lock.hpp) as soon as its row changes.
#include <cmath>

#include "call_context.hpp"
#include "config_relation.hpp"
#include "core/validate.hpp"
#include "cpp_boundary.hpp"
#include "extension_sql.hpp"
#include "limit_cache.hpp"
#include "memory_state.hpp"
#include "state_relations.hpp"

namespace pg_ratelimit {
namespace {

constexpr const char *DEFAULT_LIMIT_NAME = "default";

text *limit_name_arg(FunctionCallInfo fcinfo, int argno) {
    text *name = required_text_arg(fcinfo, argno, "name");
    const int size = VARSIZE_ANY_EXHDR(name);
    if (size == 0)
        ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE), errmsg("rate limit name must not be empty")));
    if (size > MAX_LIMIT_NAME_BYTES)
        ereport(ERROR, (errcode(ERRCODE_STRING_DATA_RIGHT_TRUNCATION), errmsg("rate limit name is too long"),
                        errdetail("The name is %d bytes; the maximum is %d.", size, MAX_LIMIT_NAME_BYTES)));
    return name;
}

// A new epoch (core::Limit::epoch): random, never 0 (the default of rows inserted directly).
int64 new_epoch() {
    uint64 epoch = 0;
    while (epoch == 0)
        if (!pg_strong_random(&epoch, sizeof(epoch))) epoch = static_cast<uint64>(GetCurrentTimestamp()) | 1;
    return static_cast<int64>(epoch);
}

double required_float8_arg(FunctionCallInfo fcinfo, int argno, const char *argname) {
    if (PG_ARGISNULL(argno))
        ereport(ERROR, (errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED), errmsg("%s must not be null", argname)));
    return PG_GETARG_FLOAT8(argno);
}

// Deletes the state of every key of the limit from both state tables (the limit's storage may have just
// changed); each table is checked first (no triggers to fire as the owner, see state_relations.hpp). The
// memory state goes when the change commits (memory_state.hpp: the row trigger schedules it).
void delete_all_keys(const CallContext &context, Datum name) {
    for (const StateTable table : STATE_TABLES) {
        require_usable_state_table(context.extension, context.schema, table);
        Datum values[] = {name};
        if (SPI_execute_plan(extension_statement(Statement::delete_limit_state, table), values, nullptr, false, 0) !=
            SPI_OK_DELETE)
            elog(ERROR, "pg_ratelimit: deleting the state of a rate limit failed");
    }
}

// rate_limit_define(name, rate, period, algorithm, capacity, max_reserved, start, shards, storage, jitter)
Datum define_body(FunctionCallInfo fcinfo) {
    const CallContext context = call_context(fcinfo, false);
    text *name = limit_name_arg(fcinfo, 0);
    core::Limit limit;
    limit.rate = required_float8_arg(fcinfo, 1, "rate");
    if (PG_ARGISNULL(2)) ereport(ERROR, (errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED), errmsg("period must not be null")));
    limit.period = period_micros(PG_GETARG_INTERVAL_P(2));
    limit.algorithm = algorithm_from_text(text_to_cstring(required_text_arg(fcinfo, 3, "algorithm")));
    limit.capacity = PG_ARGISNULL(4) ? limit.rate : PG_GETARG_FLOAT8(4);
    // Unlimited reservations by default; a sliding window takes none (its previous window's count must
    // stay within the capacity: sliding_window.cpp).
    const bool sliding = limit.algorithm == core::Algorithm::sliding_window;
    limit.max_reserved = PG_ARGISNULL(5) ? (sliding ? 0 : INFINITY) : PG_GETARG_FLOAT8(5);
    limit.has_start = !PG_ARGISNULL(6);
    if (limit.has_start) {
        limit.start = PG_GETARG_TIMESTAMPTZ(6);
        if (TIMESTAMP_NOT_FINITE(limit.start)) limit.start = core::MAX_START_OFFSET + 1;  // reported below
    }
    limit.shards = PG_ARGISNULL(7) ? 1 : PG_GETARG_INT32(7);
    limit.storage = PG_ARGISNULL(8) ? core::Storage::durable : storage_from_text(text_to_cstring(PG_GETARG_TEXT_PP(8)));
    limit.jitter = PG_ARGISNULL(9) ? 0 : jitter_micros(PG_GETARG_INTERVAL_P(9));
    require_valid_limit(limit);
    if (limit.storage == core::Storage::memory) require_memory_state();

    require_usable_config_table(context.extension, context.schema, RowExclusiveLock);
    const int sql_token = extension_sql_begin(context.schema);

    // Lock the existing definition (if any) to learn whether the algorithm, the shards or the storage change.
    Oid name_type[] = {TEXTOID};
    Datum name_value[] = {PointerGetDatum(name)};
    extension_sql_run(
        "SELECT algorithm, shards, storage, epoch FROM ONLY rate_limit_config WHERE name OPERATOR(pg_catalog.=) $1"
        " FOR UPDATE",
        1, name_type, name_value, nullptr, false, SPI_OK_SELECT);
    const bool existed = SPI_processed == 1;
    const char *old_algorithm = existed ? SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1) : nullptr;
    bool isnull = false;
    const int old_shards =
        existed ? DatumGetInt32(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 2, &isnull)) : 0;
    const char *old_storage = existed ? SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 3) : nullptr;
    const int64 old_epoch =
        existed ? DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 4, &isnull)) : 0;
    // A key's two numbers mean something else under another algorithm, its rows under another split, and
    // state moved to another storage is not carried over: such keys start afresh, under a new epoch.
    const bool fresh = !existed || strcmp(old_algorithm, algorithm_name(limit.algorithm)) != 0 ||
                       old_shards != limit.shards || strcmp(old_storage, storage_name(limit.storage)) != 0;
    const int64 epoch = fresh ? new_epoch() : old_epoch;

    // One spelling per meaning: unlimited reservations are stored as NULL (never 'Infinity'), none as 0
    // (never -0).
    const bool unlimited = std::isinf(limit.max_reserved);
    Oid types[] = {TEXTOID,        TEXTOID, FLOAT8OID, INTERVALOID, FLOAT8OID,  FLOAT8OID,
                   TIMESTAMPTZOID, INT4OID, TEXTOID,   INT8OID,     INTERVALOID};
    Datum values[] = {PointerGetDatum(name),
                      CStringGetTextDatum(algorithm_name(limit.algorithm)),
                      Float8GetDatum(limit.rate),
                      PG_GETARG_DATUM(2),
                      Float8GetDatum(limit.capacity),
                      Float8GetDatum(unlimited ? 0 : limit.max_reserved + 0.0),
                      PG_ARGISNULL(6) ? 0 : PG_GETARG_DATUM(6),
                      Int32GetDatum(limit.shards),
                      CStringGetTextDatum(storage_name(limit.storage)),
                      Int64GetDatum(epoch),
                      PG_ARGISNULL(9) ? IntervalPGetDatum(interval_from_micros(0)) : PG_GETARG_DATUM(9)};
    const char nulls[] = {' ', ' ', ' ', ' ', ' ', unlimited ? 'n' : ' ', PG_ARGISNULL(6) ? 'n' : ' ',
                          ' ', ' ', ' ', ' '};
    // The row trigger turns an insert of 'default' over the shipped row into an update of that row; ON
    // CONFLICT covers a redefinition and a concurrent first definition of the same name.
    extension_sql_run(
        "INSERT INTO rate_limit_config (name, algorithm, rate, period, capacity, max_reserved, start, shards, storage,"
        " epoch, jitter) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11) ON CONFLICT (name) DO UPDATE SET"
        " algorithm = EXCLUDED.algorithm, rate = EXCLUDED.rate, period = EXCLUDED.period,"
        " capacity = EXCLUDED.capacity, max_reserved = EXCLUDED.max_reserved, start = EXCLUDED.start,"
        " shards = EXCLUDED.shards, storage = EXCLUDED.storage, epoch = EXCLUDED.epoch, jitter = EXCLUDED.jitter",
        11, types, values, nulls, false, SPI_OK_INSERT);
    if (existed && fresh) delete_all_keys(context, PointerGetDatum(name));
    extension_sql_end(sql_token);
    PG_RETURN_VOID();
}

// rate_limit_drop(name): removes the limit and the state of all its keys.
Datum drop_body(FunctionCallInfo fcinfo) {
    const CallContext context = call_context(fcinfo, false);
    text *name = limit_name_arg(fcinfo, 0);
    const char *name_string = text_to_cstring(name);
    if (strcmp(name_string, DEFAULT_LIMIT_NAME) == 0)
        ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE), errmsg("the default rate limit cannot be dropped"),
                        errhint("Redefine it with rate_limit_define('default', ...) instead.")));
    require_usable_config_table(context.extension, context.schema, RowExclusiveLock);
    const int sql_token = extension_sql_begin(context.schema);
    Oid types[] = {TEXTOID};
    Datum values[] = {PointerGetDatum(name)};
    extension_sql_run("DELETE FROM ONLY rate_limit_config WHERE name OPERATOR(pg_catalog.=) $1", 1, types, values,
                      nullptr, false, SPI_OK_DELETE);
    if (SPI_processed == 0)
        ereport(ERROR, (errcode(ERRCODE_UNDEFINED_OBJECT), errmsg("rate limit \"%s\" does not exist", name_string)));
    delete_all_keys(context, PointerGetDatum(name));
    extension_sql_end(sql_token);
    PG_RETURN_VOID();
}

}  // namespace
}  // namespace pg_ratelimit

PG_RATELIMIT_SQL_FUNCTION(rate_limit_define, pg_ratelimit::define_body)
PG_RATELIMIT_SQL_FUNCTION(rate_limit_drop, pg_ratelimit::drop_body)
