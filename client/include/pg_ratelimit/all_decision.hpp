// Limiter::request_all's argument and answer: several (key, limit, cost) consumed together, all or none.
#pragma once

#include <string>
#include <vector>

#include "pg_ratelimit/decision.hpp"

namespace pg_ratelimit {

// One (key, limit, cost) of a request_all call: a per-second and a per-day limit of one user, a user's and
// the global limit, ...
struct LimitRequest {
    std::string key{};
    std::string limit = "default";
    double cost = 1;
};

// rate_limit_request_all's answer. A plain value.
struct AllDecision {
    // The call's decision: allowed when every request was, and then every one consumed; otherwise none
    // consumed anything. remaining is the smallest of the decisions', retry_after and reset_after the
    // largest (after retry_after every denied request could succeed); shadow_denied when a shadow limit
    // would have denied one of them (shadow limits never make the call deny). Its limit and policy are
    // empty.
    Decision overall{};
    // decisions[i] for requests[i], with limit and policy as request() fills them. After a denial, the
    // requests that would have been allowed say so (allowed, and the remaining they would have left),
    // though nothing was consumed.
    std::vector<Decision> decisions{};

    [[nodiscard]] bool allowed() const noexcept { return overall.allowed; }
};

}  // namespace pg_ratelimit
