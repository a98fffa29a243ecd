#include "call_context.hpp"

#include "core/algorithms.hpp"
#include "core/validate.hpp"

namespace pg_ratelimit {
namespace {

Interval *interval_from_micros(core::Micros micros) {
    auto *result = static_cast<Interval *>(palloc(sizeof(Interval)));
    result->time = micros;
    result->day = 0;
    result->month = 0;
    return result;
}

}  // namespace

CallContext *call_context(FunctionCallInfo fcinfo, bool returns_decision) {
    auto *context = static_cast<CallContext *>(fcinfo->flinfo->fn_extra);
    if (context != nullptr) return context;

    MemoryContext old = MemoryContextSwitchTo(fcinfo->flinfo->fn_mcxt);
    context = static_cast<CallContext *>(palloc0(sizeof(CallContext)));
    context->schema = get_func_namespace(fcinfo->flinfo->fn_oid);
    if (returns_decision) {
        TupleDesc desc = nullptr;
        if (get_call_result_type(fcinfo, nullptr, &desc) != TYPEFUNC_COMPOSITE)
            elog(ERROR, "pg_ratelimit: function must return rate_limit_decision");
        context->decision = BlessTupleDesc(CreateTupleDescCopy(desc));
    }
    MemoryContextSwitchTo(old);
    fcinfo->flinfo->fn_extra = context;
    return context;
}

Datum decision_datum(const CallContext *context, const core::Limit &limit, const core::Outcome &outcome) {
    Datum values[4];
    bool nulls[4] = {false, false, false, false};
    values[0] = BoolGetDatum(outcome.allowed);
    values[1] = Int64GetDatum(core::whole_units(limit, outcome.balance));
    values[2] = IntervalPGetDatum(interval_from_micros(outcome.retry_after));
    values[3] = IntervalPGetDatum(interval_from_micros(outcome.reset_after));
    return HeapTupleGetDatum(heap_form_tuple(context->decision, values, nulls));
}

text *required_text_arg(FunctionCallInfo fcinfo, int argno, const char *argname) {
    if (PG_ARGISNULL(argno))
        ereport(ERROR, (errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED), errmsg("%s must not be null", argname)));
    return PG_GETARG_TEXT_PP(argno);
}

text *key_arg(FunctionCallInfo fcinfo, int argno) {
    text *key = required_text_arg(fcinfo, argno, "key");
    if (VARSIZE_ANY_EXHDR(key) > MAX_KEY_BYTES)
        ereport(ERROR,
                (errcode(ERRCODE_STRING_DATA_RIGHT_TRUNCATION), errmsg("rate limit key is too long"),
                 errdetail("The key is %d bytes; the maximum is %d.", (int)VARSIZE_ANY_EXHDR(key), MAX_KEY_BYTES),
                 errhint("Pass a digest of long keys, for example md5(key).")));
    return key;
}

double cost_arg(FunctionCallInfo fcinfo, int argno) {
    if (PG_ARGISNULL(argno)) return 1.0;
    const double cost = PG_GETARG_FLOAT8(argno);
    // Capacity is checked once the limit is known.
    if (!core::valid_units(cost))
        ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
                        errmsg("cost must be positive, finite and at most %g", core::MAX_UNITS),
                        errdetail("cost is %g; the allowed range is (0, %g].", cost, core::MAX_UNITS)));
    return cost;
}

}  // namespace pg_ratelimit
