// rate_limit_request, rate_limit_check, rate_limit_refund and rate_limit_reset.
//
// One call = one read of the key's row, a decision by the core, and at most one write:
// - an existing key is read through its index and updated in place (state_table.hpp), no SQL involved;
//   denials and checks write nothing;
// - if the update loses a race (READ COMMITTED only: a concurrent caller changed the row first), the
//   next attempt locks the newest version and decides again, so concurrent callers on one key wait
//   their turn and never fail;
// - a new key is inserted with INSERT ... ON CONFLICT DO NOTHING; losing that race also retries.
// Under REPEATABLE READ and SERIALIZABLE a conflicting update or insert raises 40001, which the client
// library retries.
#include "call_context.hpp"
#include "clock.hpp"
#include "core/algorithms.hpp"
#include "core/validate.hpp"
#include "cpp_boundary.hpp"
#include "extension_sql.hpp"
#include "limit_cache.hpp"
#include "number_text.hpp"
#include "state_table.hpp"

namespace pg_ratelimit {
namespace {

enum class Mode { request, check, refund };

// From the second attempt on the row is locked, so a second attempt settles unless the row keeps being
// deleted and re-inserted under us; the bound only guards against a livelock.
constexpr int MAX_ATTEMPTS = 8;

struct Target {
    Oid extension;
    Oid schema;
    Datum limit_name;
    Datum key;
};

// Inserts the first row of a key; false if a concurrent transaction inserted it first.
bool insert_state(Target target, const core::State &next) {
    extension_sql_begin(target.schema);
    Datum args[] = {target.limit_name, target.key, Float8GetDatum(next.value), TimestampTzGetDatum(next.ts)};
    const int rc = SPI_execute_plan(extension_statement(Statement::insert_state), args, nullptr, false, 0);
    if (rc != SPI_OK_INSERT)
        elog(ERROR, "pg_ratelimit: inserting into rate_limit_state failed: %s", SPI_result_code_string(rc));
    const bool inserted = SPI_processed == 1;
    extension_sql_end();
    return inserted;
}

core::Outcome settle(Target target, const core::Limit &limit, Mode mode, double cost, bool reserve,
                     core::Micros origin) {
    StateTable table;
    state_table_open(target.extension, target.schema, target.limit_name, target.key, &table);
    for (int attempt = 0; attempt < MAX_ATTEMPTS; ++attempt) {
        core::State stored;
        bool found = state_table_fetch(&table, &stored);
        if (found && attempt > 0 && !IsolationUsesXactSnapshot()) found = state_table_lock_latest(&table, &stored);
        const core::State *current = found ? &stored : nullptr;
        const core::Micros now = clock_now();  // after the row lock: a waiter decides at its own turn
        const core::Outcome outcome = mode == Mode::refund ? core::refund(limit, current, now, cost, origin)
                                                           : core::request(limit, current, now, cost, reserve, origin);
        if (mode == Mode::check || !outcome.write) {
            state_table_close(&table);
            return outcome;
        }
        require_writable_transaction(mode == Mode::refund ? "refund rate limit units" : "consume rate limit units");
        const bool written = found ? state_table_update(&table, outcome.next) == WriteResult::written
                                   : insert_state(target, outcome.next);
        if (written) {
            state_table_close(&table);
            return outcome;
        }
    }
    ereport(ERROR,
            (errcode(ERRCODE_T_R_SERIALIZATION_FAILURE),
             errmsg("could not settle concurrent updates of a rate limit key"), errhint("Retry the transaction.")));
    pg_unreachable();
}

void require_cost_fits(const core::Limit &limit, double cost, const text *limit_name) {
    if (core::validate_cost(limit, cost) == core::CostProblem::exceeds_capacity)
        ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
                        errmsg("cost %s exceeds the capacity %s of rate limit \"%s\"", number_text(cost),
                               number_text(limit.capacity), text_to_cstring(limit_name)),
                        errdetail("Such a request could never succeed."),
                        errhint("Lower the cost, or raise the limit's capacity with rate_limit_define().")));
}

// Arguments (key, limit_name, cost[, reserve]) -> rate_limit_decision.
Datum decide(FunctionCallInfo fcinfo, Mode mode) {
    const CallContext context = call_context(fcinfo, true);
    text *key = key_arg(fcinfo, 0);
    text *limit_name = required_text_arg(fcinfo, 1, "limit_name");
    const double cost = cost_arg(fcinfo, 2);
    const bool reserve = mode == Mode::request && !PG_ARGISNULL(3) && PG_GETARG_BOOL(3);

    const core::Limit limit = limit_lookup(context.schema, limit_name);
    require_cost_fits(limit, cost, limit_name);
    const bool keyed_grid = limit.algorithm == core::Algorithm::fixed_window && !limit.has_start;
    const core::Micros origin =
        core::window_origin(limit, keyed_grid ? core::key_hash(VARDATA_ANY(key), VARSIZE_ANY_EXHDR(key)) : 0);
    const core::Outcome outcome =
        settle({context.extension, context.schema, PointerGetDatum(limit_name), PointerGetDatum(key)}, limit, mode,
               cost, reserve, origin);
    return decision_datum(context, limit, outcome);
}

Datum request_body(FunctionCallInfo fcinfo) { return decide(fcinfo, Mode::request); }
Datum check_body(FunctionCallInfo fcinfo) { return decide(fcinfo, Mode::check); }
Datum refund_body(FunctionCallInfo fcinfo) { return decide(fcinfo, Mode::refund); }

Datum reset_body(FunctionCallInfo fcinfo) {
    const CallContext context = call_context(fcinfo, false);
    text *key = key_arg(fcinfo, 0);
    text *limit_name = required_text_arg(fcinfo, 1, "limit_name");
    (void)limit_lookup(context.schema, limit_name);  // an unknown limit is an error, not a silent no-op
    require_writable_transaction("reset rate limit keys");
    // Checked first: the delete must not fire triggers as the owner (state_relations.hpp).
    require_usable_state_table(context.extension, context.schema);
    extension_sql_begin(context.schema);
    Datum args[] = {PointerGetDatum(limit_name), PointerGetDatum(key)};
    const int rc = SPI_execute_plan(extension_statement(Statement::delete_state), args, nullptr, false, 0);
    if (rc != SPI_OK_DELETE) elog(ERROR, "pg_ratelimit: resetting a key failed: %s", SPI_result_code_string(rc));
    extension_sql_end();
    PG_RETURN_VOID();
}

}  // namespace
}  // namespace pg_ratelimit

PG_RATELIMIT_SQL_FUNCTION(rate_limit_request, pg_ratelimit::request_body)
PG_RATELIMIT_SQL_FUNCTION(rate_limit_check, pg_ratelimit::check_body)
PG_RATELIMIT_SQL_FUNCTION(rate_limit_refund, pg_ratelimit::refund_body)
PG_RATELIMIT_SQL_FUNCTION(rate_limit_reset, pg_ratelimit::reset_body)
