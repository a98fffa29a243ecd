// rate_limit_request_all from the client's side: the statement, and its rows as an AllDecision.
#pragma once

#include <pqxx/result>
#include <string>
#include <vector>

#include "pg_ratelimit/all_decision.hpp"

namespace pg_ratelimit::detail {

// The statement (parameters $1::text[] keys, $2::text[] limit names, $3::float8[] costs), its function
// qualified with prefix ("" or a quoted schema and a dot). Columns: position, key, limit_name, then the
// decision's as decision_from_columns reads them.
std::string request_all_sql(const std::string &prefix);

// The rows as an AllDecision: position 0 is the overall decision, position i the decision of
// requests[i - 1]. Each row is checked against the call: exactly one row per position 0..requests.size(),
// and a request's row names its key and limit byte for byte. Anything else throws std::runtime_error: a
// decision must never be attributed to another key or limit. Policies are left empty.
AllDecision all_decision_from_rows(const pqxx::result &rows, const std::vector<LimitRequest> &requests);

}  // namespace pg_ratelimit::detail
