// rate_limit_request, rate_limit_check, rate_limit_refund and rate_limit_reset: arguments, the limit, and
// one settle() (settle.hpp) each; reset deletes the key's row.
#include "call_context.hpp"
#include "core/algorithms.hpp"
#include "core/validate.hpp"
#include "cpp_boundary.hpp"
#include "extension_sql.hpp"
#include "limit_cache.hpp"
#include "message_text.hpp"
#include "settle.hpp"
#include "state_relations.hpp"

namespace pg_ratelimit {
namespace {

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

// Arguments (key, limit_name, cost[, reserve]) -> rate_limit_decision.
Datum decide(FunctionCallInfo fcinfo, SettleMode mode) {
    const CallContext context = call_context(fcinfo, true);
    text *key = key_arg(fcinfo, 0);
    text *limit_name = required_text_arg(fcinfo, 1, "limit_name");
    const double cost = cost_arg(fcinfo, 2);
    const bool reserve = mode == SettleMode::request && !PG_ARGISNULL(3) && PG_GETARG_BOOL(3);

    const core::Limit limit = limit_lookup(context.extension, context.schema, limit_name);
    require_cost_fits(limit, cost, limit_name);
    const bool keyed_grid = limit.algorithm == core::Algorithm::fixed_window && !limit.has_start;
    const core::Micros origin =
        core::window_origin(limit, keyed_grid ? core::key_hash(VARDATA_ANY(key), VARSIZE_ANY_EXHDR(key)) : 0);
    const core::Outcome outcome =
        settle(StateTarget{context.extension, context.schema, PointerGetDatum(limit_name), PointerGetDatum(key)}, limit,
               mode, cost, reserve, origin);
    return decision_datum(context, limit, outcome);
}

Datum request_body(FunctionCallInfo fcinfo) { return decide(fcinfo, SettleMode::request); }
Datum check_body(FunctionCallInfo fcinfo) { return decide(fcinfo, SettleMode::check); }
Datum refund_body(FunctionCallInfo fcinfo) { return decide(fcinfo, SettleMode::refund); }

Datum reset_body(FunctionCallInfo fcinfo) {
    const CallContext context = call_context(fcinfo, false);
    text *key = key_arg(fcinfo, 0);
    text *limit_name = required_text_arg(fcinfo, 1, "limit_name");
    (void)limit_lookup(context.extension, context.schema,
                       limit_name);  // an unknown limit is an error, not a silent no-op
    require_writable_transaction("reset rate limit keys");
    // Checked first: the delete must not fire triggers as the owner (state_relations.hpp).
    require_usable_state_table(context.extension, context.schema);
    const int sql_token = extension_sql_begin(context.schema, Scan::one_key);
    Datum args[] = {PointerGetDatum(limit_name), PointerGetDatum(key)};
    const int rc = SPI_execute_plan(extension_statement(Statement::delete_state), args, nullptr, false, 0);
    if (rc != SPI_OK_DELETE) elog(ERROR, "pg_ratelimit: resetting a key failed: %s", SPI_result_code_string(rc));
    extension_sql_end(sql_token);
    PG_RETURN_VOID();
}

}  // namespace
}  // namespace pg_ratelimit

PG_RATELIMIT_SQL_FUNCTION(rate_limit_request, pg_ratelimit::request_body)
PG_RATELIMIT_SQL_FUNCTION(rate_limit_check, pg_ratelimit::check_body)
PG_RATELIMIT_SQL_FUNCTION(rate_limit_refund, pg_ratelimit::refund_body)
PG_RATELIMIT_SQL_FUNCTION(rate_limit_reset, pg_ratelimit::reset_body)
