#include "call_context.hpp"

#include "core/algorithms.hpp"
#include "core/validate.hpp"
#include "message_text.hpp"

namespace pg_ratelimit {

Interval *interval_from_micros(core::Micros micros) {
    auto *result = static_cast<Interval *>(palloc(sizeof(Interval)));
    result->time = micros;
    result->day = 0;
    result->month = 0;
    return result;
}

namespace {

// Contexts by function OID, for the life of the backend. fn_extra alone would not do: `SELECT * FROM
// rate_limit_request(...)` sets up a new FmgrInfo for every statement, and rebuilding the context (two
// catalog lookups and a tuple descriptor copy) cost 4-5% of a call. A context is two OIDs, so dropping
// the cache when functions or types change (see call_context_init) frees nothing a caller might hold.
constexpr int MAX_CACHED_FUNCTIONS = 16;  // the extension has fewer SQL functions than this
struct CachedContext {
    Oid function;
    CallContext context;
};
CachedContext cached[MAX_CACHED_FUNCTIONS];
int cached_count = 0;

void forget_contexts(Datum, int, uint32) { cached_count = 0; }

}  // namespace

void call_context_init() {
    CacheRegisterSyscacheCallback(PROCOID, forget_contexts, 0);
    CacheRegisterSyscacheCallback(TYPEOID, forget_contexts, 0);
}

CallContext call_context(FunctionCallInfo fcinfo, bool returns_decision) {
    // The functions are PARALLEL UNSAFE; only a wrapper wrongly marked safe gets here in parallel mode,
    // where reading the latest definitions (GetLatestSnapshot) and writing are both impossible.
    if (IsInParallelMode())
        ereport(ERROR,
                (errcode(ERRCODE_FEATURE_NOT_SUPPORTED), errmsg("pg_ratelimit functions cannot run in parallel mode"),
                 errhint("Do not mark functions that call them PARALLEL SAFE or RESTRICTED.")));
    AcceptInvalidationMessages();  // cheap when there are none: one unlocked flag test
    const Oid function = fcinfo->flinfo->fn_oid;
    for (int i = 0; i < cached_count; ++i)
        if (cached[i].function == function) return cached[i].context;
    const CallContext context{getExtensionOfObject(ProcedureRelationId, function), get_func_namespace(function),
                              returns_decision ? get_func_rettype(function) : InvalidOid};
    if (cached_count == MAX_CACHED_FUNCTIONS) cached_count = 0;
    cached[cached_count++] = {function, context};
    return context;
}

void decision_values(const core::Limit &limit, const core::Outcome &outcome, Datum *values) {
    values[0] = BoolGetDatum(outcome.allowed);
    values[1] = Int64GetDatum(core::whole_units(limit, outcome.balance));
    // A shadow limit's denial lets the caller through now (settle.cpp).
    values[2] = IntervalPGetDatum(interval_from_micros(outcome.shadow_denied ? 0 : outcome.retry_after));
    values[3] = IntervalPGetDatum(interval_from_micros(outcome.reset_after));
    values[4] = BoolGetDatum(outcome.shadow_denied);
}

void require_decision_rows(TupleDesc desc) {
    constexpr Oid TYPES[] = {TEXTOID, INT4OID, BOOLOID, INT8OID, INTERVALOID, INTERVALOID, BOOLOID};
    bool shape = desc->natts == 7;
    for (int i = 0; shape && i < 7; ++i)
        shape = !TupleDescAttr(desc, i)->attisdropped && TupleDescAttr(desc, i)->atttypid == TYPES[i];
    if (!shape)
        ereport(ERROR,
                (errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
                 errmsg("pg_ratelimit cannot return these rows: their columns are not (key text, position "
                        "integer, allowed boolean, remaining bigint, retry_after interval, reset_after interval, "
                        "shadow_denied boolean)"),
                 errhint("Re-create the extension.")));
}

Datum decision_datum(const CallContext &context, const core::Limit &limit, const core::Outcome &outcome) {
    Datum values[DECISION_COLUMNS];
    bool nulls[DECISION_COLUMNS] = {false, false, false, false, false};
    decision_values(limit, outcome, values);
    // The type cache keeps the descriptor current (and pinned while we use it). The type is the extension's,
    // but ALTER TYPE could still have changed it: the values fit only the install script's shape.
    TupleDesc desc = lookup_rowtype_tupdesc(context.decision_type, -1);
    constexpr Oid TYPES[DECISION_COLUMNS] = {BOOLOID, INT8OID, INTERVALOID, INTERVALOID, BOOLOID};
    bool shape = desc->natts == DECISION_COLUMNS;
    for (int i = 0; shape && i < DECISION_COLUMNS; ++i)
        shape = !TupleDescAttr(desc, i)->attisdropped && TupleDescAttr(desc, i)->atttypid == TYPES[i];
    if (!shape) {
        ReleaseTupleDesc(desc);
        ereport(ERROR, (errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
                        errmsg("pg_ratelimit cannot use type rate_limit_decision: its attributes are not "
                               "(allowed boolean, remaining bigint, retry_after interval, reset_after interval, "
                               "shadow_denied boolean)"),
                        errhint("Undo the change to the type, or re-create the extension.")));
    }
    HeapTuple tuple = heap_form_tuple(desc, values, nulls);
    ReleaseTupleDesc(desc);
    return HeapTupleGetDatum(tuple);
}

text *required_text_arg(FunctionCallInfo fcinfo, int argno, const char *argname) {
    if (PG_ARGISNULL(argno))
        ereport(ERROR, (errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED), errmsg("%s must not be null", argname)));
    return PG_GETARG_TEXT_PP(argno);
}

void require_key_length(const text *key) {
    if (VARSIZE_ANY_EXHDR(key) > MAX_KEY_BYTES)
        ereport(ERROR,
                (errcode(ERRCODE_STRING_DATA_RIGHT_TRUNCATION), errmsg("rate limit key is too long"),
                 errdetail("The key is %d bytes; the maximum is %d.", (int)VARSIZE_ANY_EXHDR(key), MAX_KEY_BYTES),
                 errhint("Pass a digest of long keys, for example md5(key).")));
}

text *key_arg(FunctionCallInfo fcinfo, int argno) {
    text *key = required_text_arg(fcinfo, argno, "key");
    require_key_length(key);
    return key;
}

double cost_arg(FunctionCallInfo fcinfo, int argno) {
    if (PG_ARGISNULL(argno)) return 1.0;
    const double cost = PG_GETARG_FLOAT8(argno);
    require_valid_cost(cost);
    return cost;
}

void require_valid_cost(double cost) {
    // Capacity is checked once the limit is known.
    if (!core::valid_units(cost))
        ereport(ERROR,
                (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
                 errmsg("cost must be between %s and %s", number_text(core::MIN_UNITS), number_text(core::MAX_UNITS)),
                 errdetail("cost is %s.", number_text(cost))));
}

core::Rescale rescale_arg(FunctionCallInfo fcinfo, int argno) {
    if (PG_ARGISNULL(argno)) return core::Rescale::proportional;
    const char *name = text_to_cstring(PG_GETARG_TEXT_PP(argno));
    if (strcmp(name, "proportional") == 0) return core::Rescale::proportional;
    if (strcmp(name, "as_is") == 0) return core::Rescale::as_is;
    if (strcmp(name, "reset") == 0) return core::Rescale::reset;
    ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE), errmsg("unknown rescale rule \"%s\"", clipped_text(name)),
                    errhint("Use 'proportional', 'as_is' or 'reset'.")));
    pg_unreachable();
}

}  // namespace pg_ratelimit
