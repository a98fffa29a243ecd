#include "state/decide_key.hpp"

#include <algorithm>
#include <cstring>

#include "catalog/key_limit.hpp"
#include "catalog/written_limits.hpp"
#include "core/algorithms.hpp"
#include "core/validate.hpp"
#include "message_text.hpp"
#include "state/memory_state.hpp"
#include "state/state_access.hpp"

namespace pg_ratelimit {

void require_cost_fits(const core::Limit &limit, double cost, const text *limit_name) {
    if (core::validate_cost(limit, cost) != core::CostProblem::exceeds_capacity) return;
    if (limit.shards > 1)
        ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
                        errmsg("cost %s exceeds the capacity %s of one of the %d shards of rate limit \"%s\"",
                               number_text(cost), number_text(limit.capacity / limit.shards), limit.shards,
                               text_to_cstring(limit_name)),
                        errdetail("A request is served by one shard: such a request could never succeed."),
                        errhint("Lower the cost, or define the limit with fewer shards or a larger capacity.")));
    ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
                    errmsg("cost %s exceeds the capacity %s of rate limit \"%s\"", number_text(cost),
                           number_text(limit.capacity), text_to_cstring(limit_name)),
                    errdetail("Such a request could never succeed."),
                    errhint("Lower the cost, or raise the limit's capacity with rate_limit_define().")));
}

core::Outcome decide_key(const CallContext &context, core::Limit &limit, text *limit_name, text *key, SettleMode mode,
                         double cost, bool reserve, core::Micros max_wait) {
    core::Limit &current = limit;
    bool accept_other_numbers = false;
    for (int attempt = 0;; ++attempt) {
        const core::Micros origin = core::key_origin(current, VARDATA_ANY(key), VARSIZE_ANY_EXHDR(key));
        bool stale = false;
        core::Outcome outcome = settle(StateTarget{context.extension, context.schema, PointerGetDatum(limit_name),
                                                   PointerGetDatum(key), current, origin, accept_other_numbers},
                                       current, mode, cost, reserve, origin, max_wait, &stale);
        if (!stale) {
            // Denied callers told to come back at spread-out instants (never earlier than they could succeed).
            if (!outcome.allowed && current.jitter > 0)
                outcome.retry_after =
                    core::jittered(current, outcome.retry_after, pg_prng_uint64(&pg_global_prng_state));
            return outcome;
        }
        // A memory entry made under other numbers of the limit: a change of it is committing (waited for), or
        // committed since this call read the definition, which is read again. The same definition again:
        // the entry is older than the changes this server carried over (a standby's, an older release's) and
        // is read as it is.
        memory_wait_for_change(limit_name);
        const core::Limit fresh =
            fresh_limit_for_key(context, limit_name, key, mode == SettleMode::check ? KeyUse::read : KeyUse::write);
        if (same_decisions(fresh, current) || attempt >= 3) accept_other_numbers = true;
        current = fresh;
    }
}

int compare_bytes(const text *a, const text *b) {
    const size_t a_length = VARSIZE_ANY_EXHDR(a);
    const size_t b_length = VARSIZE_ANY_EXHDR(b);
    const int order = memcmp(VARDATA_ANY(a), VARDATA_ANY(b), std::min(a_length, b_length));
    if (order != 0) return order;
    return a_length < b_length ? -1 : a_length > b_length ? 1 : 0;
}

int array_elements(ArrayType *array, Oid type, Datum **values, bool **nulls, const char *argname) {
    if (ARR_NDIM(array) > 1)
        ereport(ERROR, (errcode(ERRCODE_ARRAY_SUBSCRIPT_ERROR), errmsg("%s must be a one-dimensional array", argname)));
    const int elements = ArrayGetNItems(ARR_NDIM(array), ARR_DIMS(array));
    if (elements > MAX_CALL_ELEMENTS)
        ereport(ERROR,
                (errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
                 errmsg("%s has %d elements, more than the %d one call decides", argname, elements, MAX_CALL_ELEMENTS),
                 errhint("Split the call.")));
    int count = 0;
    if (type == TEXTOID)
        deconstruct_array(array, TEXTOID, -1, false, TYPALIGN_INT, values, nulls, &count);
    else
        deconstruct_array(array, FLOAT8OID, sizeof(float8), FLOAT8PASSBYVAL, TYPALIGN_DOUBLE, values, nulls, &count);
    return count;
}

}  // namespace pg_ratelimit
