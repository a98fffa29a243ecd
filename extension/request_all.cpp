// rate_limit_request_all(keys, limit_names, costs): several (key, limit, cost) triples (a per-second and a
// per-day limit of one user, a user's and the global limit, ...) consumed together, all or none.
//
// - Checked first: every argument, every limit's existence, every triple's own limit (its key's override)
//   and its cost against it, so a bad triple fails the call before anything is decided.
// - Canonical order: the triples are decided sorted by (limit_name, key) as bytes, equal pairs in the
//   order given (decided in turn: the second sees the first's consumption). Two callers sharing rows thus
//   lock them in the same order whatever order they named them in, and cannot deadlock on each other.
//   Memory limits come after every table limit, so that their entries, which do not roll back, are taken
//   only once every table triple has allowed.
// - All or nothing for the tables: with a table triple among two or more, the decisions run in an internal
//   subtransaction (as a PL/pgSQL block with an EXCEPTION clause does). After the first denial the
//   remaining triples are only checked (what they would have decided: nothing written), and the
//   subtransaction is rolled back: no write of the call stays, and the row locks it took are released.
//   Like an EXCEPTION block, a call that wrote uses a subtransaction id: a transaction that makes more than
//   64 such calls overflows its backend's cache of them (PostgreSQL's PGPROC_MAX_CACHED_SUBXIDS), which
//   makes other sessions' snapshots dearer until it ends.
// - Memory limits: the memory triples taken before a memory triple's denial are refunded (core::refund,
//   never above capacity). Between the take and the refund (microseconds) the units are unavailable to
//   other callers, who may be denied: it never admits more. A window of a fixed or sliding window limit
//   that ends in that interval receives the refund in the new window (up to the cost, once).
// - An error raised after memory entries were taken leaves them taken (the call errs on the side of
//   admitting less); a cancel is only accepted before a table triple, so it never lands there.
// - Shadow limits: settle() lets a shadow limit's denial through (allowed, shadow_denied, nothing taken),
//   so they never make the call deny, and nothing is refunded for them. The call's row says
//   shadow_denied when one of its triples does.
#include <algorithm>
#include <cstring>

#include "call_context.hpp"
#include "core/algorithms.hpp"
#include "cpp_boundary.hpp"
#include "decide_key.hpp"
#include "limit_cache.hpp"
#include "limit_kind.hpp"
#include "memory_state.hpp"
#include "override_cache.hpp"

namespace pg_ratelimit {
namespace {

// One (key, limit, cost) of the call.
struct Triple {
    int position;  // 1-based, as given
    text *key;
    text *limit_name;
    double cost;
    core::Limit limit;  // the key's own (its override, if any)
};

// The columns the function returns: ("position", key, limit_name), then rate_limit_decision's (allowed,
// remaining, retry_after, reset_after, shadow_denied).
constexpr int COLUMNS = 3 + DECISION_COLUMNS;

void require_all_rows(TupleDesc desc) {
    constexpr Oid TYPES[COLUMNS] = {INT4OID, TEXTOID, TEXTOID, BOOLOID, INT8OID, INTERVALOID, INTERVALOID, BOOLOID};
    bool shape = desc->natts == COLUMNS;
    for (int i = 0; shape && i < COLUMNS; ++i)
        shape = !TupleDescAttr(desc, i)->attisdropped && TupleDescAttr(desc, i)->atttypid == TYPES[i];
    if (!shape)
        ereport(ERROR, (errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
                        errmsg("pg_ratelimit cannot return these rows: their columns are not (position integer, key "
                               "text, limit_name text, allowed boolean, remaining bigint, retry_after interval, "
                               "reset_after interval, shadow_denied boolean)"),
                        errhint("Re-create the extension.")));
}

int compare_bytes(const text *a, const text *b) {
    const size_t a_length = VARSIZE_ANY_EXHDR(a);
    const size_t b_length = VARSIZE_ANY_EXHDR(b);
    const int order = memcmp(VARDATA_ANY(a), VARDATA_ANY(b), std::min(a_length, b_length));
    if (order != 0) return order;
    return a_length < b_length ? -1 : a_length > b_length ? 1 : 0;
}

// The canonical order (see the top of the file): table limits before memory ones, then (limit_name, key)
// as bytes, then the position.
bool decided_before(const Triple &a, const Triple &b) {
    const bool a_memory = a.limit.storage == core::Storage::memory;
    const bool b_memory = b.limit.storage == core::Storage::memory;
    if (a_memory != b_memory) return b_memory;
    int order = compare_bytes(a.limit_name, b.limit_name);
    if (order == 0) order = compare_bytes(a.key, b.key);
    return order != 0 ? order < 0 : a.position < b.position;
}

// The arguments as triples, each checked, in the order given; *count gets how many.
Triple *checked_triples(const CallContext &context, FunctionCallInfo fcinfo, int *count) {
    if (PG_ARGISNULL(0)) ereport(ERROR, (errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED), errmsg("keys must not be null")));
    if (PG_ARGISNULL(1))
        ereport(ERROR, (errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED), errmsg("limit_names must not be null")));
    Datum *keys = nullptr;
    bool *key_nulls = nullptr;
    const int key_count = array_elements(PG_GETARG_ARRAYTYPE_P(0), TEXTOID, &keys, &key_nulls, "keys");
    Datum *names = nullptr;
    bool *name_nulls = nullptr;
    const int name_count = array_elements(PG_GETARG_ARRAYTYPE_P(1), TEXTOID, &names, &name_nulls, "limit_names");
    if (name_count != key_count)
        ereport(ERROR, (errcode(ERRCODE_ARRAY_SUBSCRIPT_ERROR), errmsg("limit_names must have one element per key"),
                        errdetail("There are %d keys and %d limit names.", key_count, name_count)));
    Datum *costs = nullptr;
    bool *cost_nulls = nullptr;
    if (!PG_ARGISNULL(2)) {
        const int cost_count = array_elements(PG_GETARG_ARRAYTYPE_P(2), FLOAT8OID, &costs, &cost_nulls, "costs");
        if (cost_count != key_count)
            ereport(ERROR, (errcode(ERRCODE_ARRAY_SUBSCRIPT_ERROR), errmsg("costs must have one element per key"),
                            errdetail("There are %d keys and %d costs.", key_count, cost_count)));
    }
    if (key_count == 0)
        ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE), errmsg("keys must not be empty"),
                        errdetail("rate_limit_request_all decides at least one (key, limit) pair.")));
    auto *triples = static_cast<Triple *>(palloc(sizeof(Triple) * key_count));
    for (int i = 0; i < key_count; ++i) {
        if (key_nulls[i])
            ereport(ERROR, (errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED), errmsg("key %d must not be null", i + 1)));
        if (name_nulls[i])
            ereport(ERROR, (errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED), errmsg("limit name %d must not be null", i + 1)));
        Triple &triple = triples[i];
        triple.position = i + 1;
        triple.key = DatumGetTextPP(keys[i]);
        triple.limit_name = DatumGetTextPP(names[i]);
        require_key_length(triple.key);
        triple.cost = costs == nullptr || cost_nulls[i] ? 1.0 : DatumGetFloat8(costs[i]);
        require_valid_cost(triple.cost);
        triple.limit = effective_limit(context, rate_limit_lookup(context.extension, context.schema, triple.limit_name),
                                       triple.limit_name, triple.key);
        require_cost_fits(triple.limit, triple.cost, triple.limit_name);
        // Before any entry is taken, rather than at the first memory triple, after others were.
        if (triple.limit.storage == core::Storage::memory) require_memory_state();
    }
    *count = key_count;
    return triples;
}

// Decides every triple in the order of `order` (indexes into triples), requesting until the first denial
// and checking from then on; outcomes[i] for triples[i]. Returns the index in `order` of the first denied
// triple, or count when all allowed.
int decide_in_order(const CallContext &context, const Triple *triples, const int *order, int count,
                    core::Outcome *outcomes) {
    int denied_at = count;
    for (int n = 0; n < count; ++n) {
        const Triple &triple = triples[order[n]];
        // A cancel is taken before a table triple (the subtransaction undoes the others), never between
        // memory triples, whose entries an error would leave taken.
        if (triple.limit.storage != core::Storage::memory) CHECK_FOR_INTERRUPTS();
        const SettleMode mode = denied_at < count ? SettleMode::check : SettleMode::request;
        outcomes[order[n]] = decide_key(context, triple.limit, triple.limit_name, triple.key, mode, triple.cost, false);
        if (denied_at == count && !outcomes[order[n]].allowed) denied_at = n;
    }
    return denied_at;
}

// decide_in_order inside an internal subtransaction, released when every triple allowed and rolled back
// otherwise (or on an error, which is then raised again). No C++ object is alive across the PG_TRY
// (cpp_boundary.hpp).
int decide_in_subtransaction(const CallContext &context, const Triple *triples, const int *order, int count,
                             core::Outcome *outcomes) {
    const MemoryContext memory = CurrentMemoryContext;
    const ResourceOwner owner = CurrentResourceOwner;
    BeginInternalSubTransaction(nullptr);
    MemoryContextSwitchTo(memory);
    volatile int denied_at = count;
    PG_TRY();
    {
        denied_at = decide_in_order(context, triples, order, count, outcomes);
        if (denied_at == count)
            ReleaseCurrentSubTransaction();
        else
            RollbackAndReleaseCurrentSubTransaction();
        MemoryContextSwitchTo(memory);
        CurrentResourceOwner = owner;
    }
    PG_CATCH();
    {
        MemoryContextSwitchTo(memory);
        ErrorData *error = CopyErrorData();
        FlushErrorState();
        RollbackAndReleaseCurrentSubTransaction();
        MemoryContextSwitchTo(memory);
        CurrentResourceOwner = owner;
        ReThrowError(error);
    }
    PG_END_TRY();
    return denied_at;
}

// Gives back what the memory triples decided before the denied one took (table writes were rolled back).
void refund_memory_takes(const CallContext &context, const Triple *triples, const int *order,
                         const core::Outcome *outcomes, int denied_at) {
    for (int n = denied_at - 1; n >= 0; --n) {
        const Triple &triple = triples[order[n]];
        if (triple.limit.storage != core::Storage::memory) break;  // the memory triples are the last
        if (outcomes[order[n]].shadow_denied) continue;            // allowed, but nothing was taken
        (void)decide_key(context, triple.limit, triple.limit_name, triple.key, SettleMode::refund, triple.cost, false);
    }
}

void put_row(const ReturnSetInfo *result, int position, text *key, text *limit_name, const Datum *decision) {
    Datum values[COLUMNS];
    bool nulls[COLUMNS] = {};
    values[0] = Int32GetDatum(position);
    values[1] = PointerGetDatum(key);
    values[2] = PointerGetDatum(limit_name);
    nulls[1] = key == nullptr;
    nulls[2] = limit_name == nullptr;
    for (int i = 0; i < DECISION_COLUMNS; ++i) values[3 + i] = decision[i];
    tuplestore_putvalues(result->setResult, result->setDesc, values, nulls);
}

Datum request_all_body(FunctionCallInfo fcinfo) {
    const CallContext context = call_context(fcinfo, false);
    int count = 0;
    Triple *triples = checked_triples(context, fcinfo, &count);
    InitMaterializedSRF(fcinfo, MAT_SRF_USE_EXPECTED_DESC);
    const auto *result = reinterpret_cast<ReturnSetInfo *>(fcinfo->resultinfo);
    require_all_rows(result->setDesc);

    // The order of decision; std::sort neither allocates nor throws here.
    auto *sorted = static_cast<Triple *>(palloc(sizeof(Triple) * count));
    memcpy(sorted, triples, sizeof(Triple) * count);
    std::sort(sorted, sorted + count, decided_before);
    auto *order = static_cast<int *>(palloc(sizeof(int) * count));
    bool any_table = false;
    for (int n = 0; n < count; ++n) {
        order[n] = sorted[n].position - 1;
        any_table = any_table || sorted[n].limit.storage != core::Storage::memory;
    }

    auto *outcomes = static_cast<core::Outcome *>(palloc(sizeof(core::Outcome) * count));
    // One triple, or memory only: nothing a rollback would have to undo (a denial writes nothing).
    const int denied_at = count > 1 && any_table ? decide_in_subtransaction(context, triples, order, count, outcomes)
                                                 : decide_in_order(context, triples, order, count, outcomes);
    if (denied_at < count) refund_memory_takes(context, triples, order, outcomes, denied_at);

    // Position 0: the call's decision. Then each triple's, in the order given. (As decision_values reports
    // it, a shadow limit's denial has no retry_after.)
    int64 remaining = PG_INT64_MAX;
    core::Micros retry_after = 0;
    core::Micros reset_after = 0;
    bool shadow_denied = false;
    for (int i = 0; i < count; ++i) {
        remaining = std::min(remaining, static_cast<int64>(core::whole_units(triples[i].limit, outcomes[i].balance)));
        if (!outcomes[i].shadow_denied) retry_after = std::max(retry_after, outcomes[i].retry_after);
        reset_after = std::max(reset_after, outcomes[i].reset_after);
        shadow_denied = shadow_denied || outcomes[i].shadow_denied;
    }
    const Datum overall[DECISION_COLUMNS] = {BoolGetDatum(denied_at == count), Int64GetDatum(remaining),
                                             IntervalPGetDatum(interval_from_micros(retry_after)),
                                             IntervalPGetDatum(interval_from_micros(reset_after)),
                                             BoolGetDatum(shadow_denied)};
    put_row(result, 0, nullptr, nullptr, overall);
    for (int i = 0; i < count; ++i) {
        Datum decision[DECISION_COLUMNS];
        decision_values(triples[i].limit, outcomes[i], decision);
        put_row(result, triples[i].position, triples[i].key, triples[i].limit_name, decision);
    }
    return static_cast<Datum>(0);
}

}  // namespace
}  // namespace pg_ratelimit

PG_RATELIMIT_SQL_FUNCTION(rate_limit_request_all, pg_ratelimit::request_all_body)
