// What the decision functions share (request_functions.cpp, request_all.cpp): a cost checked against the
// key's own limit, one key's decision with its jitter, and the elements of an array argument.
#pragma once

#include "call_context.hpp"
#include "core/limit.hpp"
#include "postgres_headers.hpp"
#include "state/settle.hpp"

namespace pg_ratelimit {

// ERROR 22023 when no request of `cost` could ever succeed under `limit` (above its capacity, or above one
// shard's): such a request is a mistake, not a denial.
void require_cost_fits(const core::Limit &limit, double cost, const text *limit_name);

// One key's decision through settle() (settle.hpp); the cost has been checked against the limit. A denial's
// retry_after is jittered when the limit asks for it. A memory limit's key met under other numbers than
// `limit`'s is decided under the limit's definition read again (a change committed meanwhile), which
// `limit` then holds: what the decision is reported under.
core::Outcome decide_key(const CallContext &context, core::Limit &limit, text *limit_name, text *key, SettleMode mode,
                         double cost, bool reserve, core::Micros max_wait = core::MAX_DURATION);

// The order in which a call that locks several keys' rows takes them (memcmp of the bytes, then the
// length), whatever order its caller named them in: callers that share rows take them in one order and
// never deadlock on each other.
int compare_bytes(const text *a, const text *b);

// The most elements an array argument may have: a call's working memory (about 140 bytes per element in
// rate_limit_request_all) stays far below PostgreSQL's 1 GB allocation limit, and a cancelled call's
// refunds stay short.
constexpr int MAX_CALL_ELEMENTS = 1000000;

// The elements of a one-dimensional text (TEXTOID) or float8 (FLOAT8OID) array (an empty array has none);
// NULL elements are reported by `nulls`. ERROR 2202E for an array of more dimensions, 54000 for more than
// MAX_CALL_ELEMENTS elements.
int array_elements(ArrayType *array, Oid type, Datum **values, bool **nulls, const char *argname);

}  // namespace pg_ratelimit
