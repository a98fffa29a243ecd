// The server's rows as Decisions: one rate_limit_decision, or rate_limit_request_many's rows.
#pragma once

#include <pqxx/result>
#include <pqxx/row>
#include <string>
#include <vector>

#include "pg_ratelimit/decision.hpp"
#include "pqxx_compat.hpp"

namespace pg_ratelimit::detail {

// The columns of a decision: allowed, remaining, retry_after and reset_after as seconds (extract(epoch
// ...)), shadow_denied.
constexpr pqxx::row::size_type DECISION_COLUMNS = 5;

// The decision in row's last DECISION_COLUMNS columns, from `first` on (a row of any other width throws
// std::runtime_error). limit is the caller's name for it; the policy is left empty.
Decision decision_from_columns(const compat::RowRef &row, pqxx::row::size_type first, const std::string &limit);

// rate_limit_request_many's rows (key, position, then the decision's columns) as decisions[i] for
// keys[i]. The rows are placed by their position, not by the order they arrive in, and each is checked
// against the call: exactly one row per position 1..keys.size(), and the row's key equal byte for byte
// to keys[position - 1]. Anything else throws std::runtime_error: a decision must never be attributed
// to another key (say, after the keys were mangled on the way).
std::vector<Decision> decisions_from_batch(const pqxx::result &rows, const std::vector<std::string> &keys,
                                           const std::string &limit);

}  // namespace pg_ratelimit::detail
