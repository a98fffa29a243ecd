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
// - An error or a cancel among the memory triples (a full memory table, statement_timeout) gives back
//   what the memory triples before it took, then is raised again: it consumes nothing either.
// - A (limit, key) named more than once is decided in turn, so costs that add up to more than the limit's
//   capacity could never be allowed together: refused (22023) like one cost above the capacity.
// - Shadow limits: settle() lets a shadow limit's denial through (allowed, shadow_denied, nothing taken),
//   so they never make the call deny, and nothing is refunded for them. The call's row says
//   shadow_denied when one of its triples does.
#include <algorithm>
#include <cstring>

#include "call_context.hpp"
#include "catalog/key_limit.hpp"
#include "catalog/limit_cache.hpp"
#include "core/algorithms.hpp"
#include "core/validate.hpp"
#include "cpp_boundary.hpp"
#include "message_text.hpp"
#include "state/decide_key.hpp"
#include "state/memory_state.hpp"
#include "subtransaction.hpp"

namespace pg_ratelimit {
namespace {

// One (key, limit, cost) of the call.
struct Triple {
    int position;  // 1-based, as given
    text *key;
    text *limit_name;
    double cost;
    core::Limit limit;  // the key's own (its override, if any), then the one it was decided under
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
        triple.limit = limit_for_key(context, triple.limit_name, triple.key, KeyUse::write);
        require_cost_fits(triple.limit, triple.cost, triple.limit_name);
        // Before any entry is taken, rather than at the first memory triple, after others were.
        if (triple.limit.storage == core::Storage::memory) require_memory_state();
    }
    *count = key_count;
    return triples;
}

// ERROR 22023 when the triples naming one (limit, key) (adjacent in the canonical order) cost more in all
// than its capacity: decided in turn, they could never all be allowed, and the call would be denied for
// ever. (With shards, each cost fits one shard, checked before, but their sum may still not pack into the
// shards: that call is denied, as a single request would be when no shard holds enough.)
void require_repeats_fit(const Triple *sorted, int count) {
    for (int first = 0, end = 0; first < count; first = end) {
        double total = 0;
        for (end = first; end < count && compare_bytes(sorted[end].limit_name, sorted[first].limit_name) == 0 &&
                          compare_bytes(sorted[end].key, sorted[first].key) == 0;
             ++end)
            total += sorted[end].cost;
        if (end - first < 2) continue;
        core::Limit whole = sorted[first].limit;
        whole.shards = 1;
        if (core::validate_cost(whole, total) != core::CostProblem::exceeds_capacity) continue;
        ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
                        errmsg("%d triples name the key of triple %d under rate limit \"%s\", and their costs add up "
                               "to %s, more than its capacity %s",
                               end - first, sorted[first].position, text_to_cstring(sorted[first].limit_name),
                               number_text(total), number_text(whole.capacity)),
                        errdetail("Triples naming the same key and limit are decided in turn: they could never all "
                                  "be allowed."),
                        errhint("Name each (key, limit) once, with the sum of its costs.")));
    }
}

// Gives back what the memory triples order[first..end) took (they allowed: end is at most the first
// denial), last first. Not interruptible: it must finish once begun.
void refund_memory_takes(const CallContext &context, Triple *triples, const int *order, const core::Outcome *outcomes,
                         int first, int end) {
    HOLD_INTERRUPTS();
    for (int n = end - 1; n >= first; --n) {
        Triple &triple = triples[order[n]];
        if (outcomes[order[n]].shadow_denied) continue;  // allowed, but nothing was taken
        (void)decide_key(context, triple.limit, triple.limit_name, triple.key, SettleMode::refund, triple.cost, false);
    }
    RESUME_INTERRUPTS();
}

// Decides the memory triples order[first..count) (the last in the canonical order), requesting until the
// first denial (denied_at, if an earlier triple denied) and checking from then on. Memory entries do not
// roll back: an error or a cancel among them first gives back what the ones before it took. Returns the
// first denial's index in `order`, or count. No C++ object is alive across the PG_TRY (cpp_boundary.hpp).
int decide_memory_triples(const CallContext &context, Triple *triples, const int *order, int first, int count,
                          int denied_at, core::Outcome *outcomes) {
    const MemoryContext memory = CurrentMemoryContext;
    volatile int decided = first;  // order[first..decided) are decided
    volatile int denied = denied_at;
    PG_TRY();
    {
        for (int n = first; n < count; ++n) {
            CHECK_FOR_INTERRUPTS();
            Triple &triple = triples[order[n]];
            const SettleMode mode = denied < count ? SettleMode::check : SettleMode::request;
            outcomes[order[n]] =
                decide_key(context, triple.limit, triple.limit_name, triple.key, mode, triple.cost, false);
            decided = n + 1;
            if (denied == count && !outcomes[order[n]].allowed) denied = n;
        }
    }
    PG_CATCH();
    {
        MemoryContextSwitchTo(memory);
        ErrorData *error = CopyErrorData();
        FlushErrorState();
        // The memory table's locks are released before it raises an error; whatever else failed holding
        // one would have it released by the abort to come: release it now, so that the refunds can run.
        LWLockReleaseAll();
        const int taken_end = decided < denied ? decided : denied;
        refund_memory_takes(context, triples, order, outcomes, first, taken_end);
        ReThrowError(error);
    }
    PG_END_TRY();
    return denied;
}

// Decides every triple in the order of `order` (indexes into triples; table triples first), requesting
// until the first denial and checking from then on; outcomes[i] for triples[i]. Returns the index in
// `order` of the first denied triple, or count when all allowed.
int decide_in_order(const CallContext &context, Triple *triples, const int *order, int count, core::Outcome *outcomes) {
    int denied_at = count;
    int n = 0;
    for (; n < count && triples[order[n]].limit.storage != core::Storage::memory; ++n) {
        CHECK_FOR_INTERRUPTS();  // the table writes roll back with the statement or the subtransaction
        Triple &triple = triples[order[n]];
        const SettleMode mode = denied_at < count ? SettleMode::check : SettleMode::request;
        outcomes[order[n]] = decide_key(context, triple.limit, triple.limit_name, triple.key, mode, triple.cost, false);
        if (denied_at == count && !outcomes[order[n]].allowed) denied_at = n;
    }
    return n < count ? decide_memory_triples(context, triples, order, n, count, denied_at, outcomes) : denied_at;
}

// decide_in_order inside an internal subtransaction, released when every triple allowed and rolled back
// otherwise (or on an error, which is then raised again).
int decide_in_subtransaction(const CallContext &context, Triple *triples, const int *order, int count,
                             core::Outcome *outcomes) {
    int denied_at = count;
    (void)in_subtransaction([&] {
        denied_at = decide_in_order(context, triples, order, count, outcomes);
        return denied_at == count ? SubtransactionEnd::keep : SubtransactionEnd::roll_back;
    });
    return denied_at;
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
    require_repeats_fit(sorted, count);
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
    if (denied_at < count) {
        int first_memory = 0;
        while (first_memory < count && triples[order[first_memory]].limit.storage != core::Storage::memory)
            ++first_memory;
        refund_memory_takes(context, triples, order, outcomes, first_memory, denied_at);
    }

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
