// rate_limit_request, rate_limit_check, rate_limit_refund and rate_limit_reset.
//
// One call = one read of the key's row, a decision by the core, and at most one write:
// - the first attempt reads without a lock and writes with compare-and-set, so denials and checks
//   never write or wait;
// - if the compare-and-set loses a race (READ COMMITTED only: a concurrent caller changed the row),
//   the next attempt reads the row FOR UPDATE, so concurrent callers on one key wait their turn;
// - a new key is inserted with ON CONFLICT DO NOTHING; losing that race also retries with the lock.
// Under REPEATABLE READ and SERIALIZABLE, PostgreSQL itself raises 40001 for a conflicting update or
// insert, which the client library retries.
#include "call_context.hpp"
#include "clock.hpp"
#include "core/algorithms.hpp"
#include "core/validate.hpp"
#include "cpp_boundary.hpp"
#include "limit_cache.hpp"
#include "statements.hpp"

namespace pg_ratelimit {
namespace {

enum class Mode { request, check, refund };

// Every attempt but the first holds the row lock, so a second attempt settles unless the row keeps
// being deleted and re-inserted under us; the bound only guards against a livelock.
constexpr int MAX_ATTEMPTS = 8;

struct Target {
    Datum limit_name;
    Datum key;
};

bool fetch_state(const Statements &statements, Target target, bool lock, core::State *state) {
    Datum args[] = {target.limit_name, target.key};
    const int rc =
        SPI_execute_plan(lock ? statements.select_state_for_update : statements.select_state, args, nullptr, false, 1);
    if (rc != SPI_OK_SELECT && rc != SPI_OK_SELINTO)
        elog(ERROR, "pg_ratelimit: reading rate_limit_state failed: %s", SPI_result_code_string(rc));
    if (SPI_processed == 0) return false;
    bool isnull = false;
    state->value = DatumGetFloat8(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull));
    state->ts = DatumGetTimestampTz(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 2, &isnull));
    return true;
}

// Stores `next` if the row still holds `expected` (or, with expected == nullptr, if the key still has
// no row). Returns false when a concurrent transaction got there first.
bool store_state(const Statements &statements, Target target, const core::State *expected, const core::State &next) {
    Datum args[] = {target.limit_name,
                    target.key,
                    Float8GetDatum(next.value),
                    TimestampTzGetDatum(next.ts),
                    Float8GetDatum(expected != nullptr ? expected->value : 0),
                    TimestampTzGetDatum(expected != nullptr ? expected->ts : 0)};
    const int expected_rc = expected != nullptr ? SPI_OK_UPDATE : SPI_OK_INSERT;
    const int rc = SPI_execute_plan(expected != nullptr ? statements.update_state : statements.insert_state, args,
                                    nullptr, false, 0);
    if (rc != expected_rc) elog(ERROR, "pg_ratelimit: writing rate_limit_state failed: %s", SPI_result_code_string(rc));
    return SPI_processed == 1;
}

core::Outcome settle(const Statements &statements, Target target, const core::Limit &limit, Mode mode, double cost,
                     bool reserve, core::Micros origin) {
    for (int attempt = 0; attempt < MAX_ATTEMPTS; ++attempt) {
        core::State stored;
        const bool found = fetch_state(statements, target, attempt > 0, &stored);
        const core::State *current = found ? &stored : nullptr;
        const core::Micros now = clock_now();  // after the row lock: a waiter decides at its own turn
        const core::Outcome outcome = mode == Mode::refund ? core::refund(limit, current, now, cost, origin)
                                                           : core::request(limit, current, now, cost, reserve, origin);
        if (mode == Mode::check || !outcome.write) return outcome;
        if (store_state(statements, target, current, outcome.next)) return outcome;
    }
    ereport(ERROR,
            (errcode(ERRCODE_T_R_SERIALIZATION_FAILURE),
             errmsg("could not settle concurrent updates of a rate limit key"), errhint("Retry the transaction.")));
    pg_unreachable();
}

void require_cost_fits(const core::Limit &limit, double cost, const text *limit_name) {
    if (core::validate_cost(limit, cost) == core::CostProblem::exceeds_capacity)
        ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
                        errmsg("cost %g exceeds the capacity %g of rate limit \"%s\"", cost, limit.capacity,
                               text_to_cstring(limit_name)),
                        errdetail("Such a request could never succeed."),
                        errhint("Lower the cost, or raise the limit's capacity with rate_limit_define().")));
}

void spi_connect() {
    if (SPI_connect() != SPI_OK_CONNECT) elog(ERROR, "pg_ratelimit: SPI_connect failed");
}

// Arguments (key, limit_name, cost[, reserve]) -> rate_limit_decision.
Datum decide(FunctionCallInfo fcinfo, Mode mode) {
    CallContext *context = call_context(fcinfo, true);
    text *key = key_arg(fcinfo, 0);
    text *limit_name = required_text_arg(fcinfo, 1, "limit_name");
    const double cost = cost_arg(fcinfo, 2);
    const bool reserve = mode == Mode::request && !PG_ARGISNULL(3) && PG_GETARG_BOOL(3);

    spi_connect();
    const Statements &statements = statements_for(context->schema);
    const core::Limit limit = limit_lookup(statements, limit_name);
    require_cost_fits(limit, cost, limit_name);
    const bool keyed_grid = limit.algorithm == core::Algorithm::fixed_window && !limit.has_start;
    const core::Micros origin =
        core::window_origin(limit, keyed_grid ? core::key_hash(VARDATA_ANY(key), VARSIZE_ANY_EXHDR(key)) : 0);
    const core::Outcome outcome =
        settle(statements, {PointerGetDatum(limit_name), PointerGetDatum(key)}, limit, mode, cost, reserve, origin);
    SPI_finish();
    return decision_datum(context, limit, outcome);
}

Datum request_body(FunctionCallInfo fcinfo) { return decide(fcinfo, Mode::request); }
Datum check_body(FunctionCallInfo fcinfo) { return decide(fcinfo, Mode::check); }
Datum refund_body(FunctionCallInfo fcinfo) { return decide(fcinfo, Mode::refund); }

Datum reset_body(FunctionCallInfo fcinfo) {
    CallContext *context = call_context(fcinfo, false);
    text *key = key_arg(fcinfo, 0);
    text *limit_name = required_text_arg(fcinfo, 1, "limit_name");
    spi_connect();
    const Statements &statements = statements_for(context->schema);
    (void)limit_lookup(statements, limit_name);  // an unknown limit is an error, not a silent no-op
    Datum args[] = {PointerGetDatum(limit_name), PointerGetDatum(key)};
    const int rc = SPI_execute_plan(statements.delete_state, args, nullptr, false, 0);
    if (rc != SPI_OK_DELETE) elog(ERROR, "pg_ratelimit: resetting a key failed: %s", SPI_result_code_string(rc));
    SPI_finish();
    PG_RETURN_VOID();
}

}  // namespace
}  // namespace pg_ratelimit

PG_RATELIMIT_SQL_FUNCTION(rate_limit_request, pg_ratelimit::request_body)
PG_RATELIMIT_SQL_FUNCTION(rate_limit_check, pg_ratelimit::check_body)
PG_RATELIMIT_SQL_FUNCTION(rate_limit_refund, pg_ratelimit::refund_body)
PG_RATELIMIT_SQL_FUNCTION(rate_limit_reset, pg_ratelimit::reset_body)
