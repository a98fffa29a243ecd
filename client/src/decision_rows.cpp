#include "decision_rows.hpp"

#include <cstdint>
#include <stdexcept>

#include "seconds_text.hpp"

namespace pg_ratelimit::detail {
namespace {

[[noreturn]] void malformed(const std::string &why) {
    throw std::runtime_error("pg_ratelimit: the server returned an unexpected decision row: " + why);
}

}  // namespace

Decision decision_from_columns(const compat::RowRef &row, pqxx::row::size_type first, const std::string &limit) {
    // libpqxx does not bound-check row[i]: a row of another shape must be refused before it is read.
    if (row.size() != first + DECISION_COLUMNS)
        malformed(std::to_string(row.size()) + " columns where " + std::to_string(first + DECISION_COLUMNS) +
                  " were expected");
    Decision decision;
    decision.limit = limit;
    decision.allowed = row[first].as<bool>();
    decision.remaining = row[first + 1].as<std::int64_t>();
    decision.retry_after = micros_from_seconds(row[first + 2].c_str());
    decision.reset_after = micros_from_seconds(row[first + 3].c_str());
    decision.shadow_denied = row[first + 4].as<bool>();
    return decision;
}

std::vector<Decision> decisions_from_batch(const pqxx::result &rows, const std::vector<std::string> &keys,
                                           const std::string &limit) {
    if (static_cast<std::size_t>(rows.size()) != keys.size())  // size_type: unsigned in 6.4, int in 7+
        malformed(std::to_string(rows.size()) + " rows for " + std::to_string(keys.size()) + " keys");
    std::vector<Decision> decisions(keys.size());
    std::vector<bool> filled(keys.size(), false);
    for (const auto &row : rows) {
        const auto position = row[1].as<std::int64_t>();
        if (position < 1 || static_cast<std::uint64_t>(position) > keys.size())
            malformed("position " + std::to_string(position) + " out of 1.." + std::to_string(keys.size()));
        const auto index = static_cast<std::size_t>(position - 1);
        if (filled[index]) malformed("position " + std::to_string(position) + " twice");
        // Compared as bytes with their length: c_str() would stop at a NUL.
        const std::string key(row[0].c_str(), row[0].size());
        if (key != keys[index])
            malformed("the key at position " + std::to_string(position) + " differs from the one sent");
        decisions[index] = decision_from_columns(row, 2, limit);
        filled[index] = true;
    }
    return decisions;
}

}  // namespace pg_ratelimit::detail
