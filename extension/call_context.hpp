// What every SQL entry point needs besides its arguments: the extension and its schema (taken from the
// called function itself, so CREATE EXTENSION ... SCHEMA works) and the rate_limit_decision row type,
// cached per backend by function OID until functions or types change.
//
// call_context() is the first thing every entry point does, and it starts by accepting pending
// invalidations: every backend-local cache (limits, relation OIDs, these contexts) then reflects every
// change committed before the statement, even inside a transaction that was already open (a table read
// under READ COMMITTED would see those changes too).
#pragma once

#include "core/limit.hpp"
#include "core/rescale.hpp"
#include "postgres_headers.hpp"

namespace pg_ratelimit {

struct CallContext {
    Oid extension;
    Oid schema;
    Oid decision_type;  // rate_limit_decision, or InvalidOid for functions not returning it
};

void call_context_init();
CallContext call_context(FunctionCallInfo fcinfo, bool returns_decision);

// A duration as an interval of hours, minutes and seconds (palloc'd).
Interval *interval_from_micros(core::Micros micros);

// The columns of rate_limit_decision: allowed, remaining, retry_after, reset_after, shadow_denied.
constexpr int DECISION_COLUMNS = 5;
// An outcome as a rate_limit_decision datum.
Datum decision_datum(const CallContext &context, const core::Limit &limit, const core::Outcome &outcome);
// The same DECISION_COLUMNS values, into values[0..DECISION_COLUMNS - 1].
void decision_values(const core::Limit &limit, const core::Outcome &outcome, Datum *values);
// ERROR 55000 unless `desc` is (key text, position integer, then the decision's columns).
void require_decision_rows(TupleDesc desc);

// Argument accessors that raise the documented errors. NULL in a required argument is 22004; a NULL
// optional argument means its default.
text *required_text_arg(FunctionCallInfo fcinfo, int argno, const char *argname);
text *key_arg(FunctionCallInfo fcinfo, int argno);    // required, at most MAX_KEY_BYTES
double cost_arg(FunctionCallInfo fcinfo, int argno);  // default 1; positive and finite
void require_key_length(const text *key);             // 22001 beyond MAX_KEY_BYTES
void require_valid_cost(double cost);                 // 22023 outside [MIN_UNITS, MAX_UNITS]
// How a redefinition carries stored keys over: 'proportional' (the default), 'as_is' or 'reset'; else 22023.
core::Rescale rescale_arg(FunctionCallInfo fcinfo, int argno);

inline constexpr int MAX_KEY_BYTES = 1024;

}  // namespace pg_ratelimit
