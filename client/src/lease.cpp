// Limiter::acquire and Limiter::release: rate_limit_acquire / rate_limit_release in the caller's
// transaction, as one-off parameterized statements (the caller's connection keeps no prepared statement).
#include <pg_ratelimit/errors.hpp>
#include <pg_ratelimit/limiter.hpp>
#include <pqxx/transaction_base>

#include "limiter_core.hpp"
#include "pqxx_compat.hpp"
#include "seconds_text.hpp"
#include "translate.hpp"

namespace pg_ratelimit {
namespace {

std::string schema_prefix(const Options &options) {
    if (options.schema.empty()) return "";
    std::string out = "\"";
    for (const char c : options.schema) out += c == '"' ? std::string("\"\"") : std::string(1, c);
    return out + "\".";
}

}  // namespace

Lease Limiter::acquire(pqxx::transaction_base &tx, const std::string &key, const std::string &limit, LeaseScope scope) {
    detail::require_no_nul(key, "key");
    detail::require_no_nul(limit, "limit");
    core_->require_connection(tx, {key}, {limit}, "rate_limit_acquire");
    // Intervals as seconds (extract(epoch ...)): independent of the session's IntervalStyle.
    const std::string sql =
        "SELECT d.allowed, d.remaining, extract(epoch FROM d.retry_after),"
        " extract(epoch FROM d.reset_after), d.shadow_denied FROM " +
        schema_prefix(core_->options()) + "rate_limit_acquire($1, $2, $3) AS d";
    const char *scope_text = scope == LeaseScope::session ? "session" : "transaction";
    const pqxx::result result =
        detail::with_typed_errors([&] { return compat::exec_params(tx, sql, key, limit, scope_text); });
    if (result.size() != 1 || result.columns() != 5)
        throw std::runtime_error("pg_ratelimit: rate_limit_acquire returned an unexpected result");
    const compat::RowRef row = result[0];
    Lease lease;
    lease.acquired = row[0].as<bool>();
    lease.free_slots = row[1].as<std::int64_t>();
    lease.retry_after = detail::micros_from_seconds(row[2].c_str());
    lease.reset_after = detail::micros_from_seconds(row[3].c_str());
    lease.shadow_denied = row[4].as<bool>();
    lease.scope = scope;
    lease.key = key;
    lease.limit = limit;
    return lease;
}

bool Limiter::release(pqxx::transaction_base &tx, const std::string &key, const std::string &limit) {
    detail::require_no_nul(key, "key");
    detail::require_no_nul(limit, "limit");
    core_->require_connection(tx, {key}, {limit}, "rate_limit_release");
    const std::string sql = "SELECT " + schema_prefix(core_->options()) + "rate_limit_release($1, $2)";
    const pqxx::result result = detail::with_typed_errors([&] { return compat::exec_params(tx, sql, key, limit); });
    if (result.size() != 1 || result.columns() != 1)
        throw std::runtime_error("pg_ratelimit: rate_limit_release returned an unexpected result");
    return result[0][0].as<bool>();
}

}  // namespace pg_ratelimit
