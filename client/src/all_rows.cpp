#include "all_rows.hpp"

#include <cstdint>
#include <stdexcept>

#include "decision_rows.hpp"

namespace pg_ratelimit::detail {
namespace {

[[noreturn]] void malformed(const std::string &why) {
    throw std::runtime_error("pg_ratelimit: rate_limit_request_all returned an unexpected result: " + why);
}

// Compared as bytes with their length: c_str() would stop at a NUL.
std::string field_bytes(const compat::FieldRef &field) { return std::string(field.c_str(), field.size()); }

}  // namespace

std::string request_all_sql(const std::string &prefix) {
    // The intervals as seconds, as for every call (statements.cpp says why).
    return "SELECT r.\"position\", r.key, r.limit_name, r.allowed, r.remaining, extract(epoch FROM r.retry_after),"
           " extract(epoch FROM r.reset_after), r.shadow_denied FROM " +
           prefix + "rate_limit_request_all($1::text[], $2::text[], $3::float8[]) AS r";
}

AllDecision all_decision_from_rows(const pqxx::result &rows, const std::vector<LimitRequest> &requests) {
    if (static_cast<std::size_t>(rows.size()) != requests.size() + 1)  // size_type: unsigned in 6.4, int in 7+
        malformed(std::to_string(rows.size()) + " rows for " + std::to_string(requests.size()) + " requests");
    AllDecision all;
    all.decisions.resize(requests.size());
    std::vector<bool> filled(requests.size() + 1, false);
    for (const auto &row : rows) {
        const auto position = row[0].as<std::int64_t>();
        if (position < 0 || static_cast<std::uint64_t>(position) > requests.size())
            malformed("position " + std::to_string(position) + " out of 0.." + std::to_string(requests.size()));
        const auto index = static_cast<std::size_t>(position);
        if (filled[index]) malformed("position " + std::to_string(position) + " twice");
        filled[index] = true;
        if (index == 0) {
            if (!row[1].is_null() || !row[2].is_null()) malformed("the overall row names a key or a limit");
            all.overall = decision_from_columns(row, 3, std::string{});
            continue;
        }
        const LimitRequest &request = requests[index - 1];
        if (row[1].is_null() || field_bytes(row[1]) != request.key || row[2].is_null() ||
            field_bytes(row[2]) != request.limit)
            malformed("the key or limit at position " + std::to_string(position) + " differs from the one sent");
        all.decisions[index - 1] = decision_from_columns(row, 3, request.limit);
    }
    return all;
}

}  // namespace pg_ratelimit::detail
