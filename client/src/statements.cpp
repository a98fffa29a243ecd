#include "statements.hpp"

#include <cstdint>
#include <pqxx/except>
#include <pqxx/result>

#include "translate.hpp"

namespace pg_ratelimit::detail {
namespace {

const char *const STATEMENT_NAMES[] = {"pg_ratelimit_request", "pg_ratelimit_check", "pg_ratelimit_refund",
                                       "pg_ratelimit_reset"};

std::size_t index(Call call) { return static_cast<std::size_t>(call); }

std::string quote_identifier(const std::string &name) {
    std::string out = "\"";
    for (const char c : name) out += c == '"' ? std::string("\"\"") : std::string(1, c);
    return out + '"';
}

// A decision row plus the limit's rate, period and capacity (NULL if the limit is not visible).
std::string decision_sql(const std::string &prefix, const std::string &function_call) {
    return "SELECT d.allowed, d.remaining,"
           " (extract(epoch FROM d.retry_after) * 1000000)::int8,"
           " (extract(epoch FROM d.reset_after) * 1000000)::int8,"
           " c.rate, (extract(epoch FROM c.period) * 1000000)::int8, c.capacity"
           " FROM " +
           prefix + function_call +
           " AS d"
           " LEFT JOIN " +
           prefix + "rate_limit_config AS c ON c.name = $2::text";
}

Decision to_decision(const pqxx::result &result, Call call, const std::string &limit) {
    Decision decision;
    decision.limit = limit;
    if (call == Call::reset) return decision;
    const pqxx::row row = result.at(0);
    decision.allowed = row[0].as<bool>();
    decision.remaining = row[1].as<std::int64_t>();
    decision.retry_after = std::chrono::microseconds{row[2].as<std::int64_t>()};
    decision.reset_after = std::chrono::microseconds{row[3].as<std::int64_t>()};
    if (!row[4].is_null())
        decision.policy =
            Policy{row[4].as<double>(), std::chrono::microseconds{row[5].as<std::int64_t>()}, row[6].as<double>()};
    return decision;
}

// Runs exec(sql_or_name, params...) with the call's parameters; bad input becomes a typed exception.
template <typename Exec>
pqxx::result execute(Call call, const CallArgs &args, Exec &&exec) {
    require_no_nul(args.key, "key");
    require_no_nul(args.limit, "limit name");
    try {
        switch (call) {
            case Call::request:
                return exec(args.key, args.limit, args.cost, args.reserve);
            case Call::check:
            case Call::refund:
                return exec(args.key, args.limit, args.cost);
            case Call::reset:
                break;
        }
        return exec(args.key, args.limit);
    } catch (const pqxx::sql_error &error) {
        throw_if_typed(error);
        throw;
    }
}

}  // namespace

Statements::Statements(const std::string &schema) {
    const std::string prefix = schema.empty() ? "" : quote_identifier(schema) + ".";
    sql_[index(Call::request)] =
        decision_sql(prefix, "rate_limit_request($1::text, $2::text, $3::float8, $4::boolean)");
    sql_[index(Call::check)] = decision_sql(prefix, "rate_limit_check($1::text, $2::text, $3::float8)");
    sql_[index(Call::refund)] = decision_sql(prefix, "rate_limit_refund($1::text, $2::text, $3::float8)");
    sql_[index(Call::reset)] = "SELECT " + prefix + "rate_limit_reset($1::text, $2::text)";
}

void Statements::prepare_on(pqxx::connection_base &connection) const {
    for (const Call call : {Call::request, Call::check, Call::refund, Call::reset}) {
        connection.prepare(STATEMENT_NAMES[index(call)], sql_[index(call)]);
        connection.prepare_now(STATEMENT_NAMES[index(call)]);
    }
}

Decision Statements::run_prepared(pqxx::transaction_base &tx, Call call, const CallArgs &args) const {
    const std::string name = STATEMENT_NAMES[index(call)];
    return to_decision(execute(call, args, [&](auto &&...params) { return tx.exec_prepared(name, params...); }), call,
                       args.limit);
}

Decision Statements::run_unprepared(pqxx::transaction_base &tx, Call call, const CallArgs &args) const {
    const std::string &sql = sql_[index(call)];
    return to_decision(execute(call, args, [&](auto &&...params) { return tx.exec_params(sql, params...); }), call,
                       args.limit);
}

}  // namespace pg_ratelimit::detail
