// What a pooled call is, as far as running it again after a lost connection is concerned.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "pg_ratelimit/all_decision.hpp"

namespace pg_ratelimit::detail {

struct PooledCall {
    // The server function (InDoubt::call()).
    const char *function = "";
    // Writes nothing (check): autocommit, retried after any lost connection.
    bool read_only = false;
    // What the call asks for: InDoubt::requests(), and the limits whose storage decides whether a lost
    // transaction left a trace. Built only after a lost connection, never on the common path.
    std::function<std::vector<LimitRequest>()> requests{};
};

// The distinct limits of requests, in first-seen order.
std::vector<std::string> limits_of(const std::vector<LimitRequest> &requests);

}  // namespace pg_ratelimit::detail
