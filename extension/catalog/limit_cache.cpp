#include "catalog/limit_cache.hpp"

#include <cmath>
#include <iterator>
#include <limits>
#include "pg_compat.hpp"

#include "catalog/config_relation.hpp"
#include "catalog/time_zones.hpp"
#include "core/calendar.hpp"
#include "core/leases.hpp"
#include "core/validate.hpp"
#include "cpp_boundary.hpp"
#include "message_text.hpp"

namespace pg_ratelimit {
namespace {

struct CacheEntry {
    char name[MAX_LIMIT_NAME_BYTES + 1];  // hash key, NUL-terminated
    core::Limit limit;
};

HTAB *cache = nullptr;
Oid cache_schema = InvalidOid;  // the extension schema the cache was filled from
Oid config_relid = InvalidOid;  // its rate_limit_config, whose invalidations drop the cache

void drop_cache() {
    if (cache != nullptr) hash_destroy(cache);
    cache = nullptr;
    cache_schema = InvalidOid;
    config_relid = InvalidOid;
}

void on_relcache_invalidation(Datum, Oid relid) {
    if (relid == InvalidOid || relid == config_relid) drop_cache();
}

HTAB *cache_for(Oid schema) {
    if (cache != nullptr && schema == cache_schema) return cache;
    drop_cache();
    cache = create_limit_name_table("pg_ratelimit limits", sizeof(CacheEntry), CacheMemoryContext);
    cache_schema = schema;
    config_relid = get_relname_relid("rate_limit_config", schema);
    return cache;
}

}  // namespace

HTAB *create_limit_name_table(const char *what, Size entry_size, MemoryContext context) {
    HASHCTL ctl;
    memset(&ctl, 0, sizeof(ctl));
    ctl.keysize = MAX_LIMIT_NAME_BYTES + 1;
    ctl.entrysize = entry_size;
    ctl.hcxt = context;
    return hash_create(what, 16, &ctl, HASH_ELEM | HASH_STRINGS | HASH_CONTEXT);
}

bool limit_read(Datum name, Snapshot snapshot, core::Limit *limit) {
    Datum args[] = {name};
    const int rc = SPI_execute_snapshot(extension_statement(Statement::select_limit), args, nullptr, snapshot,
                                        InvalidSnapshot, false, false, 1);
    if (rc != SPI_OK_SELECT)
        elog(ERROR, "pg_ratelimit: reading rate_limit_config failed: %s", SPI_result_code_string(rc));
    if (SPI_processed == 0) return false;
    *limit = limit_from_row(SPI_tuptable->vals[0], SPI_tuptable->tupdesc);
    require_valid_limit(*limit);
    return true;
}

bool limit_row_complete(HeapTuple row, TupleDesc desc, int first_column) {
    for (const int number : {1, 2, 3, 4, 7, 8, 9, 10, 12}) {
        bool isnull = false;
        (void)SPI_getbinval(row, desc, number + first_column - 1, &isnull);
        if (isnull) return false;
    }
    return true;
}

core::Limit limit_from_row(HeapTuple row, TupleDesc desc, int first_column) {
    // LIMIT_COLUMNS, as select_limit reads them. The table declares them NOT NULL (but max_reserved and
    // start); a DBA can drop that, and a NULL is then an error here, never a NULL pointer read.
    const auto column = [&](int number, const char *name, bool nullable, bool *isnull) {
        const Datum value = SPI_getbinval(row, desc, number + first_column - 1, isnull);
        if (*isnull && !nullable)
            ereport(ERROR,
                    (errcode(ERRCODE_NOT_NULL_VIOLATION), errmsg("rate_limit_config has a NULL %s for a limit", name),
                     errhint("Redefine the limit with rate_limit_define().")));
        return value;
    };
    core::Limit limit;
    bool isnull = false;
    limit.algorithm = algorithm_from_text(TextDatumGetCString(column(1, "algorithm", false, &isnull)));
    limit.rate = DatumGetFloat8(column(2, "rate", false, &isnull));
    const Interval *period = DatumGetIntervalP(column(3, "period", false, &isnull));
    limit.capacity = DatumGetFloat8(column(4, "capacity", false, &isnull));
    const Datum max_reserved = column(5, "max_reserved", true, &isnull);
    limit.max_reserved = isnull ? std::numeric_limits<double>::infinity() : DatumGetFloat8(max_reserved);
    const Datum start = column(6, "start", true, &isnull);
    limit.has_start = !isnull;
    limit.start = isnull ? 0 : DatumGetTimestampTz(start);
    limit.shards = DatumGetInt32(column(7, "shards", false, &isnull));
    limit.storage = storage_from_text(TextDatumGetCString(column(8, "storage", false, &isnull)));
    limit.epoch = static_cast<uint64>(DatumGetInt64(column(9, "epoch", false, &isnull)));
    limit.jitter = jitter_micros(DatumGetIntervalP(column(10, "jitter", false, &isnull)));
    const Datum time_zone = column(11, "time_zone", true, &isnull);
    set_limit_period(&limit, period, isnull ? nullptr : TextDatumGetCString(time_zone));
    limit.shadow = DatumGetBool(column(12, "shadow", false, &isnull));
    return limit;
}

void limit_cache_init() { CacheRegisterRelcacheCallback(on_relcache_invalidation, 0); }

void limit_cache_reset() { drop_cache(); }

void require_limit_name_length(const text *name) {
    const int size = VARSIZE_ANY_EXHDR(name);
    if (size > MAX_LIMIT_NAME_BYTES)
        ereport(ERROR, (errcode(ERRCODE_STRING_DATA_RIGHT_TRUNCATION), errmsg("rate limit name is too long"),
                        errdetail("The name is %d bytes; the maximum is %d.", size, MAX_LIMIT_NAME_BYTES)));
}

bool limit_find(Oid extension, Oid schema, const text *name, core::Limit *limit) {
    require_limit_name_length(name);
    const int size = VARSIZE_ANY_EXHDR(name);
    char key[MAX_LIMIT_NAME_BYTES + 1];
    memset(key, 0, sizeof(key));
    memcpy(key, VARDATA_ANY(name), size);

    // YugabyteDB delivers invalidations to other nodes only for DDL, not for the relcache invalidation
    // rate_limit_config's trigger queues on a change of its rows: there, every call reads the row.
    const bool cached = !server_is_yugabytedb();
    HTAB *limits = cache_for(schema);
    auto *hit = cached ? static_cast<CacheEntry *>(hash_search(limits, key, HASH_FIND, nullptr)) : nullptr;
    if (hit != nullptr) {
        *limit = hit->limit;
        return true;
    }
    require_usable_config_table(extension, schema, AccessShareLock);
    // The latest snapshot, not the transaction's: see the header comment.
    const int sql_token = extension_sql_begin(schema);
    const bool found = limit_read(PointerGetDatum(name), GetLatestSnapshot(), limit);
    extension_sql_end(sql_token);
    if (!found) return false;
    // An invalidation processed while reading (the read takes locks) may have dropped the cache.
    limits = cache_for(schema);
    auto *entry = static_cast<CacheEntry *>(hash_search(limits, key, HASH_ENTER, nullptr));
    entry->limit = *limit;
    return true;
}

core::Limit limit_lookup(Oid extension, Oid schema, const text *name) {
    core::Limit limit;
    if (!limit_find(extension, schema, name, &limit))
        ereport(ERROR,
                (errcode(ERRCODE_UNDEFINED_OBJECT), errmsg("rate limit \"%s\" does not exist", text_to_cstring(name)),
                 errhint("Define it with rate_limit_define().")));
    return limit;
}

// Indexed by core::Algorithm.
constexpr const char *ALGORITHM_NAMES[] = {"token_bucket", "fixed_window", "gcra", "sliding_window", "concurrency"};

core::Algorithm algorithm_from_text(const char *name) {
    for (std::size_t i = 0; i < std::size(ALGORITHM_NAMES); ++i)
        if (strcmp(name, ALGORITHM_NAMES[i]) == 0) return static_cast<core::Algorithm>(i);
    ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
                    errmsg("unknown rate limit algorithm \"%s\"", clipped_text(name)),
                    errhint("Use 'token_bucket', 'gcra', 'fixed_window', 'sliding_window' or 'concurrency'.")));
    pg_unreachable();
}

const char *algorithm_name(core::Algorithm algorithm) { return ALGORITHM_NAMES[static_cast<std::size_t>(algorithm)]; }

core::Storage storage_from_text(const char *name) {
    if (strcmp(name, "durable") == 0) return core::Storage::durable;
    if (strcmp(name, "unlogged") == 0) return core::Storage::unlogged;
    if (strcmp(name, "memory") == 0) return core::Storage::memory;
    ereport(ERROR,
            (errcode(ERRCODE_INVALID_PARAMETER_VALUE), errmsg("unknown rate limit storage \"%s\"", clipped_text(name)),
             errhint("Use 'durable', 'unlogged' or 'memory'.")));
    pg_unreachable();
}

const char *storage_name(core::Storage storage) {
    switch (storage) {
        case core::Storage::durable:
            return "durable";
        case core::Storage::unlogged:
            return "unlogged";
        case core::Storage::memory:
            return "memory";
    }
    return "durable";
}

core::Micros jitter_micros(const Interval *jitter) {
    if (!pg_compat::interval_is_finite(jitter))
        ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE), errmsg("jitter must be finite"),
                        errdetail("The allowed range is from 0 to 1 day.")));
    if (jitter->month != 0)
        ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE), errmsg("jitter must not contain months or years"),
                        errdetail("The allowed range is from 0 to 1 day.")));
    // Beyond MAX_JITTER (or negative) is rejected by require_valid_limit; clamp so the sum cannot overflow.
    const double micros = static_cast<double>(jitter->day) * USECS_PER_DAY + static_cast<double>(jitter->time);
    if (micros > static_cast<double>(core::MAX_JITTER)) return core::MAX_JITTER + 1;
    if (micros < 0) return -1;
    return jitter->time + static_cast<core::Micros>(jitter->day) * USECS_PER_DAY;
}

core::Micros period_micros(const Interval *period) {
    Assert(period->month == 0);  // set_limit_period makes a calendar of months
    // A period beyond MAX_PERIOD is rejected by require_valid_limit; clamp so the sum cannot overflow.
    const double micros = static_cast<double>(period->day) * USECS_PER_DAY + static_cast<double>(period->time);
    if (micros > static_cast<double>(core::MAX_PERIOD)) return core::MAX_PERIOD + 1;
    if (micros <= 0) return 0;
    return period->time + static_cast<core::Micros>(period->day) * USECS_PER_DAY;
}

void require_valid_limit(const core::Limit &limit) {
    switch (core::validate_limit(limit)) {
        case core::LimitProblem::none:
            return;
        case core::LimitProblem::rate:
            ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
                            errmsg("rate must be between %s and %s", number_text(core::MIN_UNITS),
                                   number_text(core::MAX_UNITS)),
                            errdetail("rate is %s.", number_text(limit.rate))));
            break;
        case core::LimitProblem::period:
            ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE), errmsg("period must be positive"),
                            errdetail("The allowed range is from 1 microsecond to 100 years.")));
            break;
        case core::LimitProblem::period_too_long:
            ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE), errmsg("period must be at most 100 years"),
                            errdetail("The allowed range is from 1 microsecond to 100 years (36,600 days).")));
            break;
        case core::LimitProblem::capacity:
            ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
                            errmsg("capacity must be between %s and %s", number_text(core::MIN_UNITS),
                                   number_text(core::MAX_UNITS)),
                            errdetail("capacity is %s.", number_text(limit.capacity))));
            break;
        case core::LimitProblem::max_reserved:
            ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
                            errmsg("max_reserved must be between 0 and %s", number_text(core::MAX_UNITS)),
                            errdetail("max_reserved is %s.", number_text(limit.max_reserved)),
                            errhint("Pass NULL for unlimited reservations.")));
            break;
        case core::LimitProblem::start_needs_window:
            ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
                            errmsg("start applies only to the fixed_window and sliding_window algorithms"),
                            errhint("Omit start, or use algorithm => 'fixed_window' or 'sliding_window'.")));
            break;
        case core::LimitProblem::sliding_capacity:
            ereport(ERROR,
                    (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
                     errmsg("a sliding_window limit's capacity must equal its rate"),
                     errdetail("rate is %s and capacity is %s.", number_text(limit.rate), number_text(limit.capacity)),
                     errhint("Omit capacity: a sliding window admits at most rate units in any period.")));
            break;
        case core::LimitProblem::sliding_reservations:
            ereport(ERROR,
                    (errcode(ERRCODE_INVALID_PARAMETER_VALUE), errmsg("sliding_window limits cannot take reservations"),
                     errdetail("max_reserved is %s; it must be 0.", number_text(limit.max_reserved)),
                     errhint("Omit max_reserved, or use the token_bucket or gcra algorithm.")));
            break;
        case core::LimitProblem::sliding_period:
            ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
                            errmsg("a sliding_window limit's period must be at least 1 millisecond")));
            break;
        case core::LimitProblem::jitter:
            ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE), errmsg("jitter must be between 0 and 1 day")));
            break;
        case core::LimitProblem::shards:
            ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
                            errmsg("shards must be between 1 and %d", core::MAX_SHARDS),
                            errdetail("shards is %d.", limit.shards)));
            break;
        case core::LimitProblem::shards_too_small:
            ereport(ERROR,
                    (errcode(ERRCODE_INVALID_PARAMETER_VALUE), errmsg("too many shards for the rate and capacity"),
                     errdetail("Each of the %d shards would get a rate of %s and a capacity of %s; both must be at "
                               "least %s.",
                               limit.shards, number_text(limit.rate / limit.shards),
                               number_text(limit.capacity / limit.shards), number_text(core::MIN_UNITS))));
            break;
        case core::LimitProblem::calendar_algorithm:
            ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
                            errmsg("calendar periods apply only to the fixed_window algorithm"),
                            errdetail(limit.calendar.unit == core::CalendarUnit::month
                                          ? "A period of months or years has no fixed length."
                                          : "A time_zone makes a period of calendar days or weeks."),
                            errhint("Use algorithm => 'fixed_window' for calendar windows, or a period in days "
                                    "or hours without time_zone.")));
            break;
        case core::LimitProblem::calendar_start:
            ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
                            errmsg("start cannot be combined with a calendar period"),
                            errdetail("Calendar windows open at local midnight of the first day of each period."),
                            errhint("Omit start, or omit time_zone and use a period of days or hours.")));
            break;
        case core::LimitProblem::calendar_count:
            ereport(ERROR,
                    (errcode(ERRCODE_INVALID_PARAMETER_VALUE), errmsg("a calendar period must be at most 100 years"),
                     errdetail("The allowed range is up to %d months, %d weeks or %d days.", core::MAX_CALENDAR_MONTHS,
                               core::MAX_CALENDAR_WEEKS, core::MAX_CALENDAR_DAYS)));
            break;
        case core::LimitProblem::concurrency_slots:
            ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
                            errmsg("a concurrency limit's rate must be a whole number of slots between 1 and %d",
                                   core::MAX_LEASE_SLOTS),
                            errdetail("rate is %s.", number_text(limit.rate)),
                            errhint("rate is how many leases of a key may be held at once.")));
            break;
        case core::LimitProblem::concurrency_shape:
            ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
                            errmsg("concurrency limits take no capacity, reservations, shards or storage"),
                            errdetail("capacity must equal rate, max_reserved must be 0, shards 1 and storage "
                                      "'durable' (leases live in the lock manager)."),
                            errhint("Omit capacity, max_reserved, shards and storage.")));
            break;
        case core::LimitProblem::start_out_of_range:
            ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE), errmsg("start is out of range"),
                            errdetail("start must be a finite timestamp within 10,000 years of 2000-01-01.")));
            break;
    }
}

}  // namespace pg_ratelimit
