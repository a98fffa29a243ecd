#include "limit_cache.hpp"

#include <cmath>
#include <limits>

#include "core/validate.hpp"
#include "cpp_boundary.hpp"

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
    HASHCTL ctl;
    memset(&ctl, 0, sizeof(ctl));
    ctl.keysize = MAX_LIMIT_NAME_BYTES + 1;
    ctl.entrysize = sizeof(CacheEntry);
    ctl.hcxt = CacheMemoryContext;
    cache = hash_create("pg_ratelimit limits", 16, &ctl, HASH_ELEM | HASH_STRINGS | HASH_CONTEXT);
    cache_schema = schema;
    config_relid = get_relname_relid("rate_limit_config", schema);
    return cache;
}

// Reads the row with the latest snapshot, not the transaction's: see the header comment.
bool read_limit(const Statements &statements, Datum name, core::Limit *limit) {
    Datum args[] = {name};
    const int rc = SPI_execute_snapshot(statements.select_limit, args, nullptr, GetLatestSnapshot(), InvalidSnapshot,
                                        false, false, 1);
    if (rc != SPI_OK_SELECT)
        elog(ERROR, "pg_ratelimit: reading rate_limit_config failed: %s", SPI_result_code_string(rc));
    if (SPI_processed == 0) return false;

    HeapTuple row = SPI_tuptable->vals[0];
    TupleDesc desc = SPI_tuptable->tupdesc;
    bool isnull = false;
    limit->algorithm = algorithm_from_text(TextDatumGetCString(SPI_getbinval(row, desc, 1, &isnull)));
    limit->rate = DatumGetFloat8(SPI_getbinval(row, desc, 2, &isnull));
    limit->period = period_micros(DatumGetIntervalP(SPI_getbinval(row, desc, 3, &isnull)));
    limit->capacity = DatumGetFloat8(SPI_getbinval(row, desc, 4, &isnull));
    const Datum max_reserved = SPI_getbinval(row, desc, 5, &isnull);
    limit->max_reserved = isnull ? std::numeric_limits<double>::infinity() : DatumGetFloat8(max_reserved);
    const Datum start = SPI_getbinval(row, desc, 6, &isnull);
    limit->has_start = !isnull;
    limit->start = isnull ? 0 : DatumGetTimestampTz(start);
    require_valid_limit(*limit);
    return true;
}

}  // namespace

void limit_cache_init() { CacheRegisterRelcacheCallback(on_relcache_invalidation, 0); }

core::Limit limit_lookup(Oid schema, const text *name) {
    const int size = VARSIZE_ANY_EXHDR(name);
    char key[MAX_LIMIT_NAME_BYTES + 1];
    memset(key, 0, sizeof(key));
    if (size <= MAX_LIMIT_NAME_BYTES) memcpy(key, VARDATA_ANY(name), size);

    HTAB *limits = cache_for(schema);
    if (size <= MAX_LIMIT_NAME_BYTES) {
        auto *hit = static_cast<CacheEntry *>(hash_search(limits, key, HASH_FIND, nullptr));
        if (hit != nullptr) return hit->limit;
    }
    core::Limit limit;
    bool found = false;
    if (size <= MAX_LIMIT_NAME_BYTES) {
        if (SPI_connect() != SPI_OK_CONNECT) elog(ERROR, "pg_ratelimit: SPI_connect failed");
        found = read_limit(statements_for(schema), PointerGetDatum(name), &limit);
        SPI_finish();
    }
    if (!found)
        ereport(ERROR,
                (errcode(ERRCODE_UNDEFINED_OBJECT), errmsg("rate limit \"%s\" does not exist", text_to_cstring(name)),
                 errhint("Define it with rate_limit_define().")));
    // An invalidation processed while reading (the read takes locks) may have dropped the cache.
    limits = cache_for(schema);
    auto *entry = static_cast<CacheEntry *>(hash_search(limits, key, HASH_ENTER, nullptr));
    entry->limit = limit;
    return limit;
}

core::Algorithm algorithm_from_text(const char *name) {
    if (strcmp(name, "token_bucket") == 0) return core::Algorithm::token_bucket;
    if (strcmp(name, "fixed_window") == 0) return core::Algorithm::fixed_window;
    ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE), errmsg("unknown rate limit algorithm \"%s\"", name),
                    errhint("Use 'token_bucket' or 'fixed_window'.")));
    pg_unreachable();
}

core::Micros period_micros(const Interval *period) {
    if (period->month != 0)
        ereport(ERROR,
                (errcode(ERRCODE_INVALID_PARAMETER_VALUE), errmsg("rate limit period must not contain months or years"),
                 errdetail("Months and years have no fixed length."),
                 errhint("Use days, for example '30 days' or '365 days'.")));
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
                            errmsg("rate must be positive, finite and at most %g", core::MAX_UNITS),
                            errdetail("rate is %g; the allowed range is (0, %g].", limit.rate, core::MAX_UNITS)));
            break;
        case core::LimitProblem::period:
            ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE), errmsg("period must be positive"),
                            errdetail("The allowed range is from 1 microsecond to 100 years.")));
            break;
        case core::LimitProblem::capacity:
            ereport(ERROR,
                    (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
                     errmsg("capacity must be positive, finite and at most %g", core::MAX_UNITS),
                     errdetail("capacity is %g; the allowed range is (0, %g].", limit.capacity, core::MAX_UNITS)));
            break;
        case core::LimitProblem::max_reserved:
            ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
                            errmsg("max_reserved must be between 0 and %g", core::MAX_UNITS),
                            errdetail("max_reserved is %g.", limit.max_reserved),
                            errhint("Pass NULL for unlimited reservations.")));
            break;
        case core::LimitProblem::start_needs_fixed_window:
            ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
                            errmsg("start applies only to the fixed_window algorithm"),
                            errhint("Omit start, or use algorithm => 'fixed_window'.")));
            break;
        case core::LimitProblem::start_out_of_range:
            ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE), errmsg("start is out of range"),
                            errdetail("start must be a finite timestamp within 10,000 years of 2000-01-01.")));
            break;
    }
}

}  // namespace pg_ratelimit

namespace pg_ratelimit {
namespace {

// AFTER ... FOR EACH STATEMENT on rate_limit_config: queue an invalidation of the table's relcache
// entry, which every backend's on_relcache_invalidation turns into dropping its cached limits.
Datum config_changed_body(FunctionCallInfo fcinfo) {
    if (!CALLED_AS_TRIGGER(fcinfo)) elog(ERROR, "rate_limit_config_changed: not called as a trigger");
    const auto *trigger = reinterpret_cast<const TriggerData *>(fcinfo->context);
    CacheInvalidateRelcacheByRelid(RelationGetRelid(trigger->tg_relation));
    return PointerGetDatum(nullptr);
}

}  // namespace
}  // namespace pg_ratelimit

PG_RATELIMIT_SQL_FUNCTION(rate_limit_config_changed, pg_ratelimit::config_changed_body)
