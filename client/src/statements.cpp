#include "statements.hpp"

#include <cstdint>
#include <optional>
#include <pqxx/except>
#include <pqxx/result>

#include "all_rows.hpp"
#include "array_params.hpp"
#include "decision_rows.hpp"
#include "seconds_text.hpp"
#include "translate.hpp"

namespace pg_ratelimit::detail {
namespace {

const char *const STATEMENT_NAMES[CALL_COUNT] = {"pg_ratelimit_request", "pg_ratelimit_check",   "pg_ratelimit_refund",
                                                 "pg_ratelimit_reset",   "pg_ratelimit_enforce", "pg_ratelimit_settle",
                                                 "pg_ratelimit_reserve"};
const char *const FUNCTION_NAMES[CALL_COUNT] = {"rate_limit_request", "rate_limit_check",   "rate_limit_refund",
                                                "rate_limit_reset",   "rate_limit_enforce", "rate_limit_settle",
                                                "rate_limit_reserve"};
const char *const POLICY_STATEMENT_NAME = "pg_ratelimit_policy";
const char *const MANY_STATEMENT_NAME = "pg_ratelimit_request_many";
const char *const ALL_STATEMENT_NAME = "pg_ratelimit_request_all";

std::size_t index(Call call) { return static_cast<std::size_t>(call); }

// The statements registered on first use (Registered's bits): the calls', and the batch statements'.
Registered call_bit(Call call) { return Registered{1} << index(call); }
const Registered MANY_BIT = Registered{1} << CALL_COUNT;
const Registered ALL_BIT = Registered{1} << (CALL_COUNT + 1);

std::string quote_identifier(const std::string &name) {
    std::string out = "\"";
    for (const char c : name) out += c == '"' ? std::string("\"\"") : std::string(1, c);
    return out + '"';
}

// The decision row alone: the function call is the whole statement. (The limit's definition used to be
// joined in here, read on every call: 151k server instructions per prepared call under callgrind, against
// 109k now; see policy_cache.hpp for where it comes from instead.) The intervals come as seconds,
// extract(epoch ...), whose text the client converts to microseconds exactly: unlike an interval's own
// text it does not depend on the session's IntervalStyle, and it costs the server less than scaling and
// casting them to int8 in SQL (13% of a prepared call; 20% of a one-off statement, parsed every time).
std::string decision_sql(const std::string &prefix, const std::string &function_call) {
    return "SELECT d.allowed, d.remaining, extract(epoch FROM d.retry_after), extract(epoch FROM d.reset_after),"
           " d.shadow_denied FROM " +
           prefix + function_call + " AS d";
}

Decision to_decision(const pqxx::result &result, Call call, const std::string &limit) {
    Decision decision;
    decision.limit = limit;
    if (returns_nothing(call)) return decision;
    return decision_from_columns(result.at(0), 0, limit);
}

PolicyRead to_policy(const pqxx::result &result) {
    if (result.empty()) return PolicyRead{};
    const compat::RowRef row = result[0];
    return PolicyRead{Policy{row[0].as<double>(), micros_from_seconds(row[1].c_str()), row[2].as<double>(),
                             row[3].as<std::string>(), row[5].is_null() ? std::string{} : row[5].as<std::string>()},
                      row[4].as<bool>()};
}

// Runs exec(sql_or_name, params...) with the call's parameters; bad input becomes a typed exception.
template <typename Exec>
pqxx::result execute(Call call, const CallArgs &args, Exec &&exec) {
    require_no_nul(args.key, "key");
    require_no_nul(args.limit, "limit name");
    return with_typed_errors([&] {
        switch (call) {
            case Call::request:
                return exec(args.key, args.limit, args.cost, args.reserve);
            case Call::check:
            case Call::refund:
            case Call::enforce:
                return exec(args.key, args.limit, args.cost);
            case Call::settle:
                return exec(args.key, args.limit, args.cost, args.actual);
            case Call::reserve:
                if (args.max_wait) return exec(args.key, args.limit, args.cost, *args.max_wait);
                return exec(args.key, args.limit, args.cost, nullptr);
            case Call::reset:
                break;
        }
        return exec(args.key, args.limit);
    });
}

// Runs exec(sql_or_name, params...) with the batch's parameters; bad input becomes a typed exception.
template <typename Exec>
std::vector<Decision> execute_many(const BatchArgs &args, Exec &&exec) {
    const pqxx::result rows = with_typed_errors([&] {
        if (args.costs_param) return exec(args.keys_param, args.limit, *args.costs_param);
        return exec(args.keys_param, args.limit, nullptr);
    });
    return decisions_from_batch(rows, args.keys, args.limit);
}

}  // namespace

const char *function_name(Call call) noexcept { return FUNCTION_NAMES[index(call)]; }

Statements::Statements(const std::string &schema) {
    const std::string prefix = schema.empty() ? "" : quote_identifier(schema) + ".";
    sql_[index(Call::request)] =
        decision_sql(prefix, "rate_limit_request($1::text, $2::text, $3::float8, $4::boolean)");
    sql_[index(Call::check)] = decision_sql(prefix, "rate_limit_check($1::text, $2::text, $3::float8)");
    sql_[index(Call::refund)] = decision_sql(prefix, "rate_limit_refund($1::text, $2::text, $3::float8)");
    sql_[index(Call::reset)] = "SELECT " + prefix + "rate_limit_reset($1::text, $2::text)";
    sql_[index(Call::enforce)] = "SELECT " + prefix + "rate_limit_enforce($1::text, $2::text, $3::float8)";
    sql_[index(Call::settle)] = decision_sql(prefix, "rate_limit_settle($1::text, $2::text, $3::float8, $4::float8)");
    // max_wait travels as microseconds (int8, exact), NULL for no bound.
    sql_[index(Call::reserve)] =
        decision_sql(prefix, "rate_limit_reserve($1::text, $2::text, $3::float8, $4::int8 * interval '1 microsecond')");
    // The same columns as a single call's, after the row's key and position (decision_rows.hpp).
    many_sql_ =
        "SELECT r.key, r.\"position\", r.allowed, r.remaining, extract(epoch FROM r.retry_after),"
        " extract(epoch FROM r.reset_after), r.shadow_denied FROM " +
        prefix + "rate_limit_request_many($1::text[], $2::text, $3::float8[]) AS r";
    all_sql_ = request_all_sql(prefix);
    // The key's own numbers (per-key tiers: rate_limit_policy), and whether the limit has overrides at all
    // (policy_cache.hpp). Through the limit's row, as the caller's snapshot sees it: a limit whose row is
    // not visible gives no row (an unknown policy), never an error that would abort the caller's
    // transaction.
    policy_sql_ =
        "SELECT p.rate, extract(epoch FROM p.period), p.capacity, p.algorithm, p.limit_has_overrides,"
        " p.time_zone FROM " +
        prefix + "rate_limit_config AS c, LATERAL " + prefix +
        "rate_limit_policy($2::text, c.name) AS p WHERE c.name = $1::text";
    storage_sql_ = "SELECT c.name, c.storage FROM " + prefix + "rate_limit_config AS c WHERE c.name = ANY ($1::text[])";
}

void Statements::prepare_on(compat::Connection &connection) const {
    // A database without the extension fails here: ExtensionMissing.
    with_typed_errors([&] {
        for (const Call call : {Call::request, Call::check, Call::refund, Call::reset})
            compat::prepare_now(connection, STATEMENT_NAMES[index(call)], sql_[index(call)]);
        compat::prepare_now(connection, POLICY_STATEMENT_NAME, policy_sql_);
    });
}

void Statements::register_once(pqxx::transaction_base &tx, Registered &registered, Registered bit, const char *name,
                               const std::string &sql) {
    if ((registered & bit) != 0) return;
    compat::prepare_now(tx.conn(), name, sql);
    registered |= bit;
}

Decision Statements::run_prepared(pqxx::transaction_base &tx, Registered &registered, Call call,
                                  const CallArgs &args) const {
    const char *const name = STATEMENT_NAMES[index(call)];
    const bool on_first_use = call == Call::enforce || call == Call::settle || call == Call::reserve;
    return to_decision(execute(call, args,
                               [&](auto &&...params) {
                                   if (on_first_use)
                                       register_once(tx, registered, call_bit(call), name, sql_[index(call)]);
                                   return compat::exec_prepared(tx, name, params...);
                               }),
                       call, args.limit);
}

Decision Statements::run_unprepared(pqxx::transaction_base &tx, Call call, const CallArgs &args) const {
    const std::string &sql = sql_[index(call)];
    return to_decision(execute(call, args, [&](auto &&...params) { return compat::exec_params(tx, sql, params...); }),
                       call, args.limit);
}

std::vector<Decision> Statements::run_many_prepared(pqxx::transaction_base &tx, Registered &registered,
                                                    const BatchArgs &args) const {
    return execute_many(args, [&](auto &&...params) {
        register_once(tx, registered, MANY_BIT, MANY_STATEMENT_NAME, many_sql_);
        return compat::exec_prepared(tx, MANY_STATEMENT_NAME, params...);
    });
}

std::vector<Decision> Statements::run_many_unprepared(pqxx::transaction_base &tx, const BatchArgs &args) const {
    return execute_many(args, [&](auto &&...params) { return compat::exec_params(tx, many_sql_, params...); });
}

AllDecision Statements::run_all_prepared(pqxx::transaction_base &tx, Registered &registered,
                                         const AllArgs &args) const {
    return all_decision_from_rows(with_typed_errors([&] {
                                      register_once(tx, registered, ALL_BIT, ALL_STATEMENT_NAME, all_sql_);
                                      return compat::exec_prepared(tx, ALL_STATEMENT_NAME, args.keys_param,
                                                                   args.limits_param, args.costs_param);
                                  }),
                                  args.requests);
}

AllDecision Statements::run_all_unprepared(pqxx::transaction_base &tx, const AllArgs &args) const {
    return all_decision_from_rows(
        with_typed_errors(
            [&] { return compat::exec_params(tx, all_sql_, args.keys_param, args.limits_param, args.costs_param); }),
        args.requests);
}

PolicyRead Statements::policy_prepared(pqxx::transaction_base &tx, const std::string &limit,
                                       const std::string &key) const {
    return to_policy(with_typed_errors([&] { return compat::exec_prepared(tx, POLICY_STATEMENT_NAME, limit, key); }));
}

PolicyRead Statements::policy_unprepared(pqxx::transaction_base &tx, const std::string &limit,
                                         const std::string &key) const {
    return to_policy(with_typed_errors([&] { return compat::exec_params(tx, policy_sql_, limit, key); }));
}

bool Statements::table_storage(pqxx::transaction_base &tx, const std::vector<std::string> &limits) const {
    const pqxx::result rows = with_typed_errors(
        [&] { return compat::exec_params(tx, storage_sql_, compat::binary_param(text_array_param(limits))); });
    for (const std::string &limit : limits) {
        bool table = false;
        for (const auto &row : rows)
            if (row[0].as<std::string>() == limit) {
                const std::string storage = row[1].is_null() ? std::string{} : row[1].as<std::string>();
                table = storage == "durable" || storage == "unlogged";
            }
        if (!table) return false;
    }
    return true;
}

}  // namespace pg_ratelimit::detail
