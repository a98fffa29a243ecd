// rate_limit_request, rate_limit_reserve, rate_limit_check, rate_limit_refund and rate_limit_reset: arguments, the
// limit, and one settle() (settle.hpp) each; reset deletes the key's rows (or memory entries).
#include <algorithm>

#include "call_context.hpp"
#include "catalog/key_limit.hpp"
#include "catalog/limit_cache.hpp"
#include "core/algorithms.hpp"
#include "core/validate.hpp"
#include "cpp_boundary.hpp"
#include "extension_sql.hpp"
#include "message_text.hpp"
#include "pg_compat.hpp"
#include "rate_limit_exceeded.hpp"
#include "state/decide_key.hpp"
#include "state/memory_state.hpp"
#include "state/settle.hpp"
#include "state/state_relations.hpp"

namespace pg_ratelimit {
namespace {

// Arguments (key, limit_name, cost[, reserve]) -> rate_limit_decision.
Datum decide(FunctionCallInfo fcinfo, SettleMode mode) {
    const CallContext context = call_context(fcinfo, true);
    text *key = key_arg(fcinfo, 0);
    text *limit_name = required_text_arg(fcinfo, 1, "limit_name");
    const double cost = cost_arg(fcinfo, 2);
    const bool reserve = mode == SettleMode::request && !PG_ARGISNULL(3) && PG_GETARG_BOOL(3);

    // A check writes nothing: it needs no writer's lock on its limit.
    core::Limit limit =
        limit_for_key(context, limit_name, key, mode == SettleMode::check ? KeyUse::read : KeyUse::write);
    require_cost_fits(limit, cost, limit_name);
    const core::Outcome outcome = decide_key(context, limit, limit_name, key, mode, cost, reserve);
    return decision_datum(context, limit, outcome);
}

// The keys of a batch and what it decided about them, in the order given.
struct Batch {
    int count;
    text *limit_name;
    text **keys;
    core::Limit *limits;  // each key's own (its override, if any), then the one it was decided under
    double *costs;
    core::Outcome *outcomes;
};

// Gives back what the memory keys order[0..end) took (allowed, not only by a shadow limit), last first. Not
// interruptible: it must finish once begun.
void refund_memory_keys(const CallContext &context, const Batch &batch, const int *order, int end) {
    HOLD_INTERRUPTS();
    for (int n = end - 1; n >= 0; --n) {
        const int i = order[n];
        if (!batch.outcomes[i].allowed || batch.outcomes[i].shadow_denied) continue;
        (void)decide_key(context, batch.limits[i], batch.limit_name, batch.keys[i], SettleMode::refund, batch.costs[i],
                         false);
    }
    RESUME_INTERRUPTS();
}

// Decides the keys in the order of `order`. Table keys roll back with the statement; memory entries do
// not, so an error or a cancel among a memory limit's keys first gives back what the keys before it took
// (f76): a call that fails consumes nothing, as rate_limit_request_all. No C++ object is alive across the
// PG_TRY (cpp_boundary.hpp).
void decide_batch(const CallContext &context, const Batch &batch, const int *order, bool memory) {
    const MemoryContext memory_context = CurrentMemoryContext;
    volatile int decided = 0;  // order[0..decided) are decided
    PG_TRY();
    {
        for (int n = 0; n < batch.count; ++n) {
            // A long batch can be cancelled between keys.
            CHECK_FOR_INTERRUPTS();
            const int i = order[n];
            batch.outcomes[i] = decide_key(context, batch.limits[i], batch.limit_name, batch.keys[i],
                                           SettleMode::request, batch.costs[i], false);
            decided = n + 1;
        }
    }
    PG_CATCH();
    {
        if (!memory) PG_RE_THROW();
        MemoryContextSwitchTo(memory_context);
        ErrorData *error = CopyErrorData();
        FlushErrorState();
        // The memory table's locks are released before it raises an error; whatever else failed holding
        // one would have it released by the abort to come: release it now, so that the refunds can run.
        LWLockReleaseAll();
        refund_memory_keys(context, batch, order, decided);
        ReThrowError(error);
    }
    PG_END_TRY();
}

// rate_limit_request_many(keys, limit_name, costs) -> one row (key, position, decision) per key, in order.
// Every key and cost is checked before the first decision, so that a bad element fails the call before it
// consumed anything (memory limits do not roll back).
Datum request_many_body(FunctionCallInfo fcinfo) {
    const CallContext context = call_context(fcinfo, false);
    if (PG_ARGISNULL(0)) ereport(ERROR, (errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED), errmsg("keys must not be null")));
    text *limit_name = required_text_arg(fcinfo, 1, "limit_name");
    Datum *keys = nullptr;
    bool *key_nulls = nullptr;
    const int count = array_elements(PG_GETARG_ARRAYTYPE_P(0), TEXTOID, &keys, &key_nulls, "keys");
    Datum *costs = nullptr;
    bool *cost_nulls = nullptr;
    if (!PG_ARGISNULL(2)) {
        const int cost_count = array_elements(PG_GETARG_ARRAYTYPE_P(2), FLOAT8OID, &costs, &cost_nulls, "costs");
        if (cost_count != count)
            ereport(ERROR, (errcode(ERRCODE_ARRAY_SUBSCRIPT_ERROR), errmsg("costs must have one element per key"),
                            errdetail("There are %d keys and %d costs.", count, cost_count)));
    }
    const core::Limit limit = named_rate_limit(context, limit_name, KeyUse::write);
    // Each key's own limit (its override, if it has one).
    auto *limits = static_cast<core::Limit *>(palloc(sizeof(core::Limit) * (count + 1)));
    for (int i = 0; i < count; ++i) {
        if (key_nulls[i])
            ereport(ERROR, (errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED), errmsg("key %d must not be null", i + 1)));
        require_key_length(DatumGetTextPP(keys[i]));
        limits[i] = limit_for_key(context, limit, limit_name, DatumGetTextPP(keys[i]), KeyUse::write);
        if (costs != nullptr && !cost_nulls[i]) {
            require_valid_cost(DatumGetFloat8(costs[i]));
            require_cost_fits(limits[i], DatumGetFloat8(costs[i]), limit_name);
        }
    }

    InitMaterializedSRF(fcinfo, MAT_SRF_USE_EXPECTED_DESC);
    const auto *result = reinterpret_cast<ReturnSetInfo *>(fcinfo->resultinfo);
    require_decision_rows(result->setDesc);
    // Table limits are decided in the keys' byte order (a key given twice: in turn), as
    // rate_limit_request_all takes its rows, so that two calls naming shared keys in other orders never
    // deadlock on the row locks they hold until commit; rows in the order given. A memory limit holds no
    // lock from one key to the next: its keys are decided in the order given, without sorting.
    // (std::sort neither allocates nor throws here, and the keys are detoasted before it.)
    Batch batch{count,
                limit_name,
                static_cast<text **>(palloc(sizeof(text *) * (count + 1))),
                limits,
                static_cast<double *>(palloc(sizeof(double) * (count + 1))),
                static_cast<core::Outcome *>(palloc(sizeof(core::Outcome) * (count + 1)))};
    auto *order = static_cast<int *>(palloc(sizeof(int) * (count + 1)));
    for (int i = 0; i < count; ++i) {
        batch.keys[i] = DatumGetTextPP(keys[i]);
        batch.costs[i] = costs == nullptr || cost_nulls[i] ? 1.0 : DatumGetFloat8(costs[i]);
        order[i] = i;
    }
    const bool memory = limit.storage == core::Storage::memory;
    if (!memory) {
        text **key_texts = batch.keys;
        std::sort(order, order + count, [key_texts](int a, int b) {
            const int bytes = compare_bytes(key_texts[a], key_texts[b]);
            return bytes != 0 ? bytes < 0 : a < b;
        });
    }
    decide_batch(context, batch, order, memory);
    for (int i = 0; i < count; ++i) {
        Datum values[2 + DECISION_COLUMNS];
        bool nulls[2 + DECISION_COLUMNS] = {};
        values[0] = PointerGetDatum(batch.keys[i]);
        values[1] = Int32GetDatum(i + 1);
        decision_values(limits[i], batch.outcomes[i], values + 2);
        tuplestore_putvalues(result->setResult, result->setDesc, values, nulls);
    }
    return static_cast<Datum>(0);
}

// Whole seconds, rounded up: a client that waits this long is never early.
int64 ceil_seconds(core::Micros micros) { return (micros + USECS_PER_SEC - 1) / USECS_PER_SEC; }

// rate_limit_throttle(key, limit_name, cost) -> (limited, limit, remaining, retry_after, reset_after):
// rate_limit_request in redis-cell's CL.THROTTLE reply. limit is the capacity in whole units (redis-cell's
// max_burst + 1); retry_after is -1 when allowed. Unlike redis-cell, which truncates, the seconds are rounded up.
Datum throttle_body(FunctionCallInfo fcinfo) {
    const CallContext context = call_context(fcinfo, false);
    text *key = key_arg(fcinfo, 0);
    text *limit_name = required_text_arg(fcinfo, 1, "limit_name");
    const double cost = cost_arg(fcinfo, 2);
    TupleDesc desc = nullptr;
    if (get_call_result_type(fcinfo, nullptr, &desc) != TYPEFUNC_COMPOSITE)
        elog(ERROR, "return type must be a row type");
    bool shape = desc->natts == 5 && TupleDescAttr(desc, 0)->atttypid == INT4OID;
    for (int i = 1; shape && i < 5; ++i) shape = TupleDescAttr(desc, i)->atttypid == INT8OID;
    if (!shape)
        ereport(ERROR, (errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
                        errmsg("pg_ratelimit cannot return these columns: they are not (limited integer, limit bigint,"
                               " remaining bigint, retry_after bigint, reset_after bigint)"),
                        errhint("Re-create the extension.")));
    core::Limit limit = limit_for_key(context, limit_name, key, KeyUse::write);
    require_cost_fits(limit, cost, limit_name);
    const core::Outcome outcome = decide_key(context, limit, limit_name, key, SettleMode::request, cost, false);
    Datum values[5];
    bool nulls[5] = {false, false, false, false, false};
    values[0] = Int32GetDatum(outcome.allowed ? 0 : 1);
    values[1] = Int64GetDatum(core::whole_units(limit, limit.capacity));
    values[2] = Int64GetDatum(core::whole_units(limit, outcome.balance));
    values[3] = Int64GetDatum(outcome.allowed ? -1 : ceil_seconds(outcome.retry_after));
    values[4] = Int64GetDatum(ceil_seconds(outcome.reset_after));
    return HeapTupleGetDatum(heap_form_tuple(BlessTupleDesc(desc), values, nulls));
}

// A max_wait argument: NULL is no bound; negative, months or years are refused (22023); beyond
// MAX_DURATION is no bound either.
core::Micros max_wait_arg(FunctionCallInfo fcinfo, int argno) {
    if (PG_ARGISNULL(argno)) return core::MAX_DURATION;
    const Interval *wait = PG_GETARG_INTERVAL_P(argno);
    // PostgreSQL 17's 'infinity' is no bound; '-infinity' is negative.
    if (!pg_compat::interval_is_finite(wait)) {
        if (wait->time > 0) return core::MAX_DURATION;
        ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE), errmsg("max_wait must not be negative")));
    }
    if (wait->month != 0)
        ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE), errmsg("max_wait must not contain months or years"),
                        errhint("Give it in days, hours, minutes or seconds.")));
    const double micros = static_cast<double>(wait->day) * USECS_PER_DAY + static_cast<double>(wait->time);
    if (micros < 0) ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE), errmsg("max_wait must not be negative")));
    if (micros >= static_cast<double>(core::MAX_DURATION)) return core::MAX_DURATION;
    return wait->time + static_cast<core::Micros>(wait->day) * USECS_PER_DAY;
}

// rate_limit_reserve(key, limit_name, cost, max_wait) -> rate_limit_decision: a reservation only if its
// units are due within max_wait (core::reserve_within); otherwise a denial that consumes nothing, so a
// caller that waits (the client's Limiter::wait) never has anything to give back.
Datum reserve_body(FunctionCallInfo fcinfo) {
    const CallContext context = call_context(fcinfo, true);
    text *key = key_arg(fcinfo, 0);
    text *limit_name = required_text_arg(fcinfo, 1, "limit_name");
    const double cost = cost_arg(fcinfo, 2);
    const core::Micros max_wait = max_wait_arg(fcinfo, 3);
    core::Limit limit = limit_for_key(context, limit_name, key, KeyUse::write);
    require_cost_fits(limit, cost, limit_name);
    const core::Outcome outcome =
        decide_key(context, limit, limit_name, key, SettleMode::request, cost, true, max_wait);
    return decision_datum(context, limit, outcome);
}

Datum request_body(FunctionCallInfo fcinfo) { return decide(fcinfo, SettleMode::request); }
Datum check_body(FunctionCallInfo fcinfo) { return decide(fcinfo, SettleMode::check); }
Datum refund_body(FunctionCallInfo fcinfo) { return decide(fcinfo, SettleMode::refund); }

Datum reset_body(FunctionCallInfo fcinfo) {
    const CallContext context = call_context(fcinfo, false);
    text *key = key_arg(fcinfo, 0);
    text *limit_name = required_text_arg(fcinfo, 1, "limit_name");
    // An unknown limit is an error, not a silent no-op.
    const core::Limit limit = limit_for_key(context, limit_name, key, KeyUse::read);
    const StateTarget target{context.extension,    context.schema, PointerGetDatum(limit_name),
                             PointerGetDatum(key), limit,          0};
    if (limit.storage == core::Storage::memory) {
        memory_state_reset(target);
        PG_RETURN_VOID();
    }
    require_writable_transaction("reset rate limit keys");
    // Checked first: the delete must not fire triggers as the owner (state_relations.hpp).
    require_usable_state_table(context.extension, context.schema, state_table_of(target));
    const int sql_token = extension_sql_begin(context.schema, Scan::one_key);
    Datum args[] = {PointerGetDatum(limit_name), PointerGetDatum(key)};
    const int rc =
        SPI_execute_plan(extension_statement(Statement::delete_state, state_table_of(target)), args, nullptr, false, 0);
    if (rc != SPI_OK_DELETE) elog(ERROR, "pg_ratelimit: resetting a key failed: %s", SPI_result_code_string(rc));
    extension_sql_end(sql_token);
    PG_RETURN_VOID();
}

// rate_limit_enforce(key, limit_name, cost) -> void: rate_limit_request, raising RL001 (rate_limit_exceeded.hpp)
// instead of returning a denial, so that the caller's transaction (a trigger's statement, say) fails.
Datum enforce_body(FunctionCallInfo fcinfo) {
    const CallContext context = call_context(fcinfo, false);
    text *key = key_arg(fcinfo, 0);
    text *limit_name = required_text_arg(fcinfo, 1, "limit_name");
    const double cost = cost_arg(fcinfo, 2);
    // The key's own limit (its override, if any: per-key tiers), as every decision function.
    core::Limit limit = limit_for_key(context, limit_name, key, KeyUse::write);
    require_cost_fits(limit, cost, limit_name);
    const core::Outcome outcome = decide_key(context, limit, limit_name, key, SettleMode::request, cost, false);
    if (!outcome.allowed) raise_rate_limit_exceeded(limit_name, key, outcome.retry_after);
    if (outcome.shadow_denied) notice_shadow_denial(limit_name, key, outcome.retry_after);
    PG_RETURN_VOID();
}

// A reserved or actual amount of rate_limit_settle: NULL, NaN, negative, infinite or outside
// {0} and [MIN_UNITS, MAX_UNITS] is refused (0: nothing reserved, or the work cost nothing).
double settled_amount_arg(FunctionCallInfo fcinfo, int argno, const char *argname) {
    if (PG_ARGISNULL(argno))
        ereport(ERROR, (errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED), errmsg("%s must not be null", argname)));
    const double amount = PG_GETARG_FLOAT8(argno);
    if (amount != 0 && !core::valid_units(amount))
        ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
                        errmsg("%s must be 0 or between %s and %s", argname, number_text(core::MIN_UNITS),
                               number_text(core::MAX_UNITS)),
                        errdetail("%s is %s.", argname, number_text(amount))));
    return amount == 0 ? 0.0 : amount;  // -0 is 0
}

// rate_limit_settle(key, limit_name, reserved, actual) -> rate_limit_decision: trues a reservation of
// `reserved` units up to the work's actual cost in one decision. Less: the difference goes back (a refund,
// never above capacity). More: the difference is taken whatever the balance (core::take: into debt beyond
// max_reserved, since the work is done). Equal: the key's state, nothing written. Always allowed.
Datum settle_reservation_body(FunctionCallInfo fcinfo) {
    const CallContext context = call_context(fcinfo, true);
    text *key = key_arg(fcinfo, 0);
    text *limit_name = required_text_arg(fcinfo, 1, "limit_name");
    const double reserved = settled_amount_arg(fcinfo, 2, "reserved");
    const double actual = settled_amount_arg(fcinfo, 3, "actual");
    // The key's own limit (its override, if any: per-key tiers), as every decision function.
    core::Limit limit = limit_for_key(context, limit_name, key, KeyUse::write);
    // No request can have reserved more than a (shard's) capacity.
    if (reserved > 0 && core::validate_cost(limit, reserved) == core::CostProblem::exceeds_capacity)
        ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
                        errmsg("reserved %s exceeds the capacity %s of %s \"%s\"", number_text(reserved),
                               number_text(limit.capacity / limit.shards),
                               limit.shards > 1 ? "one shard of rate limit" : "rate limit",
                               clipped_text(text_to_cstring(limit_name))),
                        errdetail("No request can have reserved that much.")));
    const bool gives_back = actual < reserved;
    const double difference = gives_back ? reserved - actual : actual - reserved;
    const core::Outcome outcome = decide_key(context, limit, limit_name, key,
                                             gives_back ? SettleMode::refund : SettleMode::take, difference, false);
    return decision_datum(context, limit, outcome);
}

}  // namespace
}  // namespace pg_ratelimit

PG_RATELIMIT_SQL_FUNCTION(rate_limit_request, pg_ratelimit::request_body)
PG_RATELIMIT_SQL_FUNCTION(rate_limit_reserve, pg_ratelimit::reserve_body)
PG_RATELIMIT_SQL_FUNCTION(rate_limit_request_many, pg_ratelimit::request_many_body)
PG_RATELIMIT_SQL_FUNCTION(rate_limit_check, pg_ratelimit::check_body)
PG_RATELIMIT_SQL_FUNCTION(rate_limit_throttle, pg_ratelimit::throttle_body)
PG_RATELIMIT_SQL_FUNCTION(rate_limit_refund, pg_ratelimit::refund_body)
PG_RATELIMIT_SQL_FUNCTION(rate_limit_reset, pg_ratelimit::reset_body)
PG_RATELIMIT_SQL_FUNCTION(rate_limit_enforce, pg_ratelimit::enforce_body)
PG_RATELIMIT_SQL_FUNCTION(rate_limit_settle, pg_ratelimit::settle_reservation_body)
