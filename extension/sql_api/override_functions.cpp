// rate_limit_override, rate_limit_override_drop and rate_limit_policy: per-key tiers (override_store.hpp).
//
// Cold paths, in the manner of rate_limit_define (define_functions.cpp): one-off SQL in the extension's
// schema, parameters only, every argument validated before the first write. Setting, changing or dropping
// an override carries the key's state from its old limit to its new one (core/rescale.hpp): its rows in
// the same transaction, each locked as it is read; its memory entries when the transaction commits.
//
// Locks, in the order rate_limit_define takes them too (so neither can deadlock the other), each wait
// bounded (lock_waits.hpp): the limit's row in rate_limit_config FOR SHARE (a redefinition, which
// validates every override against the new definition, waits for the override to commit, and the
// reverse), then the key's stored rows and the limit's lock (state/stored_keys.hpp, limit_lock.hpp:
// rate_limit_cleanup never judges a key full with an override that changes under it; concurrent override
// changes of one limit take turns, each reading the one before).
#include <cmath>
#include <limits>

#include "call_context.hpp"
#include "catalog/config_relation.hpp"
#include "catalog/limit_cache.hpp"
#include "catalog/override_cache.hpp"
#include "catalog/override_relation.hpp"
#include "catalog/override_store.hpp"
#include "catalog/time_zones.hpp"
#include "catalog/written_limits.hpp"
#include "clock.hpp"
#include "core/algorithms.hpp"
#include "core/calendar.hpp"
#include "core/rescale.hpp"
#include "core/shards.hpp"
#include "core/validate.hpp"
#include "cpp_boundary.hpp"
#include "extension_sql.hpp"
#include "lock_waits.hpp"
#include "message_text.hpp"
#include "state/memory_state.hpp"
#include "state/state_access.hpp"
#include "state/state_relations.hpp"
#include "state/stored_keys.hpp"

namespace pg_ratelimit {
namespace {

text *limit_name_arg(FunctionCallInfo fcinfo, int argno) {
    text *name = required_text_arg(fcinfo, argno, "limit_name");
    if (VARSIZE_ANY_EXHDR(name) == 0)
        ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE), errmsg("rate limit name must not be empty")));
    require_limit_name_length(name);
    return name;
}

// The limit's definition, its row locked FOR SHARE, then the key's stored rows (stored_keys.hpp: waiting
// for transactions that hold them without the limit's lock), then the limit's lock; ERROR 42704 if there
// is none. The definition is read as the limit cache reads it (limit_read: the same columns, validated),
// with the latest snapshot, which sees the row just locked.
core::Limit locked_limit(const CallContext &context, const text *name, const text *key) {
    Oid types[] = {TEXTOID};
    Datum values[] = {PointerGetDatum(name)};
    with_bounded_lock_waits(WaitFor{name, nullptr}, [&] {
        extension_sql_run("SELECT FROM ONLY rate_limit_config WHERE name OPERATOR(pg_catalog.=) $1 FOR SHARE", 1, types,
                          values, nullptr, false, SPI_OK_SELECT);
    });
    core::Limit limit;
    if (SPI_processed == 0 || !limit_read(PointerGetDatum(name), GetLatestSnapshot(), &limit))
        ereport(ERROR,
                (errcode(ERRCODE_UNDEFINED_OBJECT), errmsg("rate limit \"%s\" does not exist", text_to_cstring(name)),
                 errhint("Define it with rate_limit_define().")));
    if (limit.storage == core::Storage::memory)
        lock_limit_for_change(name);
    else
        lock_keys_and_limit(context, name, key);
    return limit;
}

// The key's override as the statement sees it, its row locked; false if there is none.
bool locked_override(const text *name, const text *key, Override *value) {
    Oid types[] = {TEXTOID, TEXTOID};
    Datum values[] = {PointerGetDatum(name), PointerGetDatum(key)};
    with_bounded_lock_waits(WaitFor{name, nullptr}, [&] {
        extension_sql_run(
            "SELECT rate, capacity, max_reserved FROM ONLY rate_limit_override"
            " WHERE limit_name OPERATOR(pg_catalog.=) $1 AND key OPERATOR(pg_catalog.=) $2 FOR UPDATE",
            2, types, values, nullptr, false, SPI_OK_SELECT);
    });
    if (SPI_processed == 0) return false;
    *value = override_from_row(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1);
    return true;
}

// Carries the key's state from `from` to `to` (both of the same algorithm and shards: an override changes
// neither): table rows now (stored_keys.hpp), memory entries when the transaction commits. `reset`: the key
// starts full. This transaction's own rows of the key are rewritten with the rest: taking the limit's lock
// made sure they were written under `from` (catalog/written_limits.hpp).
void carry_key_state(const CallContext &context, const text *name, const text *key, const core::Limit &from,
                     const core::Limit &to, core::Rescale rule) {
    if (rule != core::Rescale::reset && !core::rescale_rewrites(from, to)) return;
    if (to.storage == core::Storage::memory) {
        const MemoryKeyLimits keys[] = {{VARDATA_ANY(key), static_cast<int>(VARSIZE_ANY_EXHDR(key)), from, to}};
        memory_state_rescale_keys_at_commit(name, rule, keys, 1);
        return;
    }
    rescale_stored_key(context, name, key, from, to, rule);
}

// rate_limit_override(key, limit_name, rate, capacity, max_reserved, rescale)
Datum override_body(FunctionCallInfo fcinfo) {
    const CallContext context = call_context(fcinfo, false);
    text *key = key_arg(fcinfo, 0);
    text *name = limit_name_arg(fcinfo, 1);
    if (PG_ARGISNULL(2)) ereport(ERROR, (errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED), errmsg("rate must not be null")));
    const double nan = std::numeric_limits<double>::quiet_NaN();
    Override value{PG_GETARG_FLOAT8(2), PG_ARGISNULL(3) ? nan : PG_GETARG_FLOAT8(3),
                   PG_ARGISNULL(4) ? nan : PG_GETARG_FLOAT8(4)};
    // A NaN given (not NULL) is invalid, not "the limit's, scaled": the validation below must see it.
    const bool nan_capacity = !PG_ARGISNULL(3) && std::isnan(value.capacity);
    const bool nan_max_reserved = !PG_ARGISNULL(4) && std::isnan(value.max_reserved);
    const core::Rescale rule = rescale_arg(fcinfo, 5);
    // What can be checked without the limit, before anything is read.
    if (!core::valid_units(value.rate)) {
        core::Limit probe;
        probe.rate = value.rate;
        require_valid_limit(probe);  // the rate's message
    }

    require_usable_config_table(context.extension, context.schema, RowShareLock);
    (void)require_usable_override_table(context.extension, context.schema, RowExclusiveLock);
    const int sql_token = extension_sql_begin(context.schema);
    const core::Limit limit = locked_limit(context, name, key);
    Override old{0, 0, 0};
    const core::Limit from = locked_override(name, key, &old) ? apply_override(limit, old) : limit;
    core::Limit to = apply_override(limit, value);
    if (nan_capacity) to.capacity = nan;
    if (nan_max_reserved) to.max_reserved = nan;
    require_valid_override(to, name, VARDATA_ANY(key), VARSIZE_ANY_EXHDR(key));

    // One spelling per meaning, as rate_limit_define: NULL follows the limit, 'Infinity' is unlimited, -0 is 0.
    Oid types[] = {TEXTOID, TEXTOID, FLOAT8OID, FLOAT8OID, FLOAT8OID};
    Datum values[] = {PointerGetDatum(name), PointerGetDatum(key), Float8GetDatum(value.rate + 0.0),
                      Float8GetDatum(std::isnan(value.capacity) ? 0 : value.capacity + 0.0),
                      Float8GetDatum(std::isnan(value.max_reserved) ? 0 : value.max_reserved + 0.0)};
    const char nulls[] = {' ', ' ', ' ', std::isnan(value.capacity) ? 'n' : ' ',
                          std::isnan(value.max_reserved) ? 'n' : ' '};
    extension_sql_run(
        "INSERT INTO rate_limit_override (limit_name, key, rate, capacity, max_reserved) VALUES ($1, $2, $3, $4, $5)"
        " ON CONFLICT (limit_name, key) DO UPDATE SET rate = EXCLUDED.rate, capacity = EXCLUDED.capacity,"
        " max_reserved = EXCLUDED.max_reserved",
        5, types, values, nulls, false, SPI_OK_INSERT);
    carry_key_state(context, name, key, from, to, rule);
    extension_sql_end(sql_token);
    PG_RETURN_VOID();
}

// rate_limit_override_drop(key, limit_name) -> whether there was one. The key's state is carried back
// to the limit proportionally.
Datum override_drop_body(FunctionCallInfo fcinfo) {
    const CallContext context = call_context(fcinfo, false);
    text *key = key_arg(fcinfo, 0);
    text *name = limit_name_arg(fcinfo, 1);
    require_usable_config_table(context.extension, context.schema, RowShareLock);
    (void)require_usable_override_table(context.extension, context.schema, RowExclusiveLock);
    const int sql_token = extension_sql_begin(context.schema);
    const core::Limit limit = locked_limit(context, name, key);
    Oid types[] = {TEXTOID, TEXTOID};
    Datum values[] = {PointerGetDatum(name), PointerGetDatum(key)};
    extension_sql_run(
        "DELETE FROM ONLY rate_limit_override WHERE limit_name OPERATOR(pg_catalog.=) $1"
        " AND key OPERATOR(pg_catalog.=) $2 RETURNING rate, capacity, max_reserved",
        2, types, values, nullptr, false, SPI_OK_DELETE_RETURNING);
    const bool existed = SPI_processed > 0;
    if (existed) {
        const Override old = override_from_row(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1);
        carry_key_state(context, name, key, apply_override(limit, old), limit, core::Rescale::proportional);
    }
    extension_sql_end(sql_token);
    PG_RETURN_BOOL(existed);
}

// rate_limit_policy(key, limit_name) -> (algorithm, rate, period, capacity, max_reserved, overridden,
// limit_has_overrides): the numbers the key is decided under (RateLimit-Policy), readable by everyone
// like rate_limit_check, while rate_limit_override itself is not.
Datum policy_body(FunctionCallInfo fcinfo) {
    const CallContext context = call_context(fcinfo, false);
    text *key = key_arg(fcinfo, 0);
    text *limit_name = required_text_arg(fcinfo, 1, "limit_name");
    TupleDesc desc = nullptr;
    if (get_call_result_type(fcinfo, nullptr, &desc) != TYPEFUNC_COMPOSITE)
        elog(ERROR, "return type must be a row type");
    constexpr Oid TYPES[] = {TEXTOID, FLOAT8OID, INTERVALOID, FLOAT8OID, FLOAT8OID, BOOLOID, BOOLOID, TEXTOID};
    constexpr int COLUMNS = sizeof(TYPES) / sizeof(TYPES[0]);
    bool shape = desc->natts == COLUMNS;
    for (int i = 0; shape && i < COLUMNS; ++i) shape = TupleDescAttr(desc, i)->atttypid == TYPES[i];
    if (!shape)
        ereport(ERROR, (errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
                        errmsg("pg_ratelimit cannot return these columns: they are not (algorithm text, rate float8,"
                               " period interval, capacity float8, max_reserved float8, overridden boolean,"
                               " limit_has_overrides boolean, time_zone text)"),
                        errhint("Re-create the extension.")));
    const core::Limit limit = limit_lookup(context.extension, context.schema, limit_name);
    bool overridden = false;
    const core::Limit effective = effective_limit(context, limit, limit_name, key, &overridden);
    const bool any = overridden || limit_has_overrides(context, limit_name);
    Datum values[COLUMNS];
    bool nulls[COLUMNS] = {false, false, false, false, false, false, false, false};
    values[0] = CStringGetTextDatum(algorithm_name(effective.algorithm));
    values[1] = Float8GetDatum(effective.rate);
    // A calendar's period is the window in progress (a month of 28 to 31 days, a day of 23 to 25 hours).
    const core::Calendar &calendar = effective.calendar;
    core::Micros period = effective.period;
    if (calendar.unit != core::CalendarUnit::none) {
        const core::CalendarIndex window = core::calendar_index(calendar, clock_now());
        period = core::calendar_start(calendar, window + 1) - core::calendar_start(calendar, window);
    }
    values[2] = IntervalPGetDatum(interval_from_micros(period));
    values[3] = Float8GetDatum(effective.capacity);
    nulls[4] = std::isinf(effective.max_reserved);
    values[4] = Float8GetDatum(nulls[4] ? 0 : effective.max_reserved);
    values[5] = BoolGetDatum(overridden);
    values[6] = BoolGetDatum(any);
    nulls[7] = calendar.unit == core::CalendarUnit::none;
    values[7] = nulls[7] ? 0 : CStringGetTextDatum(time_zone_name(*calendar.zone));
    return HeapTupleGetDatum(heap_form_tuple(BlessTupleDesc(desc), values, nulls));
}

}  // namespace
}  // namespace pg_ratelimit

PG_RATELIMIT_SQL_FUNCTION(rate_limit_override, pg_ratelimit::override_body)
PG_RATELIMIT_SQL_FUNCTION(rate_limit_override_drop, pg_ratelimit::override_drop_body)
PG_RATELIMIT_SQL_FUNCTION(rate_limit_policy, pg_ratelimit::policy_body)
