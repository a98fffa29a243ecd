// rate_limit_define and rate_limit_drop: the named limits in rate_limit_config.
//
// Cold paths, so they run one-off SQL in the extension's schema (extension_sql.hpp; parameters only,
// never spliced input). Every argument is validated before the first write. Locks, each wait bounded
// (lock_waits.hpp): the limit's row, then its stored keys and the limit's lock (state/stored_keys.hpp),
// which the table's row trigger takes too, for changes made by hand.
#include <cmath>

#include "call_context.hpp"
#include "catalog/config_relation.hpp"
#include "catalog/limit_cache.hpp"
#include "catalog/limit_kind.hpp"
#include "catalog/override_hooks.hpp"
#include "catalog/time_zones.hpp"
#include "catalog/written_limits.hpp"
#include "clock.hpp"
#include "core/algorithms.hpp"
#include "core/rescale.hpp"
#include "core/shards.hpp"
#include "core/validate.hpp"
#include "cpp_boundary.hpp"
#include "extension_sql.hpp"
#include "lock_waits.hpp"
#include "message_text.hpp"
#include "state/memory_state.hpp"
#include "state/state_relations.hpp"
#include "state/stored_keys.hpp"

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

// rate_limit_define(name, rate, period, algorithm, capacity, max_reserved, start, shards, storage, jitter,
//                   rescale, time_zone, shadow)
Datum define_body(FunctionCallInfo fcinfo) {
    const CallContext context = call_context(fcinfo, false);
    text *name = limit_name_arg(fcinfo, 0);
    core::Limit limit;
    limit.rate = required_float8_arg(fcinfo, 1, "rate");
    if (PG_ARGISNULL(2)) ereport(ERROR, (errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED), errmsg("period must not be null")));
    limit.algorithm = algorithm_from_text(text_to_cstring(required_text_arg(fcinfo, 3, "algorithm")));
    // A zone is stored in its own spelling ('europe/paris' as 'Europe/Paris'); NULL stays NULL.
    const core::TimeZone *zone = nullptr;
    if (!PG_ARGISNULL(11)) zone = time_zone_named(text_to_cstring(PG_GETARG_TEXT_PP(11)));
    set_limit_period(&limit, PG_GETARG_INTERVAL_P(2), zone == nullptr ? nullptr : time_zone_name(*zone));
    limit.capacity = PG_ARGISNULL(4) ? limit.rate : PG_GETARG_FLOAT8(4);
    // Unlimited reservations by default; a sliding window takes none (its previous window's count must
    // stay within the capacity: sliding_window.cpp), nor does a concurrency limit (leases, not units).
    const bool no_reservations =
        limit.algorithm == core::Algorithm::sliding_window || limit.algorithm == core::Algorithm::concurrency;
    limit.max_reserved = PG_ARGISNULL(5) ? (no_reservations ? 0 : INFINITY) : PG_GETARG_FLOAT8(5);
    limit.has_start = !PG_ARGISNULL(6);
    if (limit.has_start) {
        limit.start = PG_GETARG_TIMESTAMPTZ(6);
        if (TIMESTAMP_NOT_FINITE(limit.start)) limit.start = core::MAX_START_OFFSET + 1;  // reported below
    }
    limit.shards = PG_ARGISNULL(7) ? 1 : PG_GETARG_INT32(7);
    limit.storage = PG_ARGISNULL(8) ? core::Storage::durable : storage_from_text(text_to_cstring(PG_GETARG_TEXT_PP(8)));
    limit.jitter = PG_ARGISNULL(9) ? 0 : jitter_micros(PG_GETARG_INTERVAL_P(9));
    if (PG_ARGISNULL(12)) ereport(ERROR, (errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED), errmsg("shadow must not be null")));
    limit.shadow = PG_GETARG_BOOL(12);
    const core::Rescale rule = rescale_arg(fcinfo, 10);
    require_valid_limit(limit);
    if (limit.storage == core::Storage::memory) require_memory_state();

    require_usable_config_table(context.extension, context.schema, RowExclusiveLock);
    const int sql_token = extension_sql_begin(context.schema);

    // Lock the existing definition (if any): what its keys hold is carried over to the new one, or not.
    Oid name_type[] = {TEXTOID};
    Datum name_value[] = {PointerGetDatum(name)};
    with_bounded_lock_waits(WaitFor{name, nullptr}, [&] {
        extension_sql_run("SELECT " LIMIT_COLUMNS
                          " FROM ONLY rate_limit_config WHERE name OPERATOR(pg_catalog.=) $1 FOR UPDATE",
                          1, name_type, name_value, nullptr, false, SPI_OK_SELECT);
    });
    const bool existed = SPI_processed == 1;
    // A row with a NULL where a value belongs (after a DBA's ALTER TABLE) is replaced: its keys start afresh.
    const bool old_complete = existed && limit_row_complete(SPI_tuptable->vals[0], SPI_tuptable->tupdesc);
    const core::Limit old = old_complete ? limit_from_row(SPI_tuptable->vals[0], SPI_tuptable->tupdesc) : core::Limit{};
    if (old_complete) require_concurrency_kept(old, limit, text_to_cstring(name));  // the row trigger's check, first
    // The stored keys are locked before the limit's lock is taken (stored_keys.hpp): the wait for the
    // transactions holding them holds up nobody else.
    if (existed) lock_keys_and_limit(context, name, nullptr);
    // Keys start afresh, under a new epoch, when asked to, when their numbers would mean something else
    // (another algorithm, unless it converts; another split over shards), or when their state would have
    // to move to another storage.
    const bool fresh = !old_complete || core::validate_limit(old) != core::LimitProblem::none ||
                       rule == core::Rescale::reset || !core::state_carries_over(old, limit) ||
                       old.storage != limit.storage;
    const int64 epoch = fresh ? new_epoch() : static_cast<int64>(old.epoch);
    limit.epoch = static_cast<uint64>(epoch);

    // One spelling per meaning: unlimited reservations are stored as NULL (never 'Infinity'), none as 0
    // (never -0).
    const bool unlimited = std::isinf(limit.max_reserved);
    Oid types[] = {TEXTOID, TEXTOID, FLOAT8OID, INTERVALOID, FLOAT8OID, FLOAT8OID, TIMESTAMPTZOID,
                   INT4OID, TEXTOID, INT8OID,   INTERVALOID, TEXTOID,   BOOLOID};
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
                      PG_ARGISNULL(9) ? IntervalPGetDatum(interval_from_micros(0)) : PG_GETARG_DATUM(9),
                      zone == nullptr ? 0 : CStringGetTextDatum(time_zone_name(*zone)),
                      BoolGetDatum(limit.shadow)};
    const char nulls[] = {' ',
                          ' ',
                          ' ',
                          ' ',
                          ' ',
                          unlimited ? 'n' : ' ',
                          PG_ARGISNULL(6) ? 'n' : ' ',
                          ' ',
                          ' ',
                          ' ',
                          ' ',
                          zone == nullptr ? 'n' : ' ',
                          ' '};
    // The row trigger turns an insert of 'default' over the shipped row into an update of that row; ON
    // CONFLICT covers a redefinition and a concurrent first definition of the same name.
    const int changes_queued = memory_state_changes_queued();
    extension_sql_run(
        "INSERT INTO rate_limit_config (name, algorithm, rate, period, capacity, max_reserved, start, shards, storage,"
        " epoch, jitter, time_zone, shadow) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)"
        " ON CONFLICT (name) DO UPDATE SET"
        " algorithm = EXCLUDED.algorithm, rate = EXCLUDED.rate, period = EXCLUDED.period,"
        " capacity = EXCLUDED.capacity, max_reserved = EXCLUDED.max_reserved, start = EXCLUDED.start,"
        " shards = EXCLUDED.shards, storage = EXCLUDED.storage, epoch = EXCLUDED.epoch, jitter = EXCLUDED.jitter,"
        " time_zone = EXCLUDED.time_zone, shadow = EXCLUDED.shadow",
        13, types, values, nulls, false, SPI_OK_INSERT);
    // The keys are carried over below, not refreshed as an UPDATE by hand would have them (memory_state.hpp).
    memory_state_cancel_refresh(name, changes_queued);
    // Per-key overrides stay, and must fit the new definition (override_hooks.hpp).
    const OverrideSet *overrides = overrides_for_definition(context, name, existed, limit);
    if (existed && fresh) {
        delete_stored_keys(context, name);
    } else if (existed && (core::rescale_rewrites(old, limit) || overrides_rewrite(overrides, old, limit))) {
        if (limit.storage == core::Storage::memory)
            overrides_rescale_memory_at_commit(name, overrides, old, limit, rule);
        else
            rescale_stored_keys(context, name, old, limit, rule, overrides);
    }
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
    with_bounded_lock_waits(WaitFor{name, nullptr}, [&] {
        extension_sql_run("SELECT FROM ONLY rate_limit_config WHERE name OPERATOR(pg_catalog.=) $1 FOR UPDATE", 1,
                          types, values, nullptr, false, SPI_OK_SELECT);
    });
    if (SPI_processed == 0)
        ereport(ERROR, (errcode(ERRCODE_UNDEFINED_OBJECT), errmsg("rate limit \"%s\" does not exist", name_string)));
    lock_keys_and_limit(context, name, nullptr);  // before the row's change, which takes the limit's lock too
    extension_sql_run("DELETE FROM ONLY rate_limit_config WHERE name OPERATOR(pg_catalog.=) $1", 1, types, values,
                      nullptr, false, SPI_OK_DELETE);
    delete_stored_keys(context, name);
    overrides_drop(context, name);
    extension_sql_end(sql_token);
    PG_RETURN_VOID();
}

}  // namespace
}  // namespace pg_ratelimit

PG_RATELIMIT_SQL_FUNCTION(rate_limit_define, pg_ratelimit::define_body)
PG_RATELIMIT_SQL_FUNCTION(rate_limit_drop, pg_ratelimit::drop_body)
