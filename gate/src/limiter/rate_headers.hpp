// The RateLimit-Policy, RateLimit and Retry-After fields of an answer, one list item per limit, each item
// exactly as the client library formats a Decision (pg_ratelimit/decision.hpp).
#pragma once

#include <string>
#include <vector>

#include "limiter/decision.hpp"
#include "limiter/plan.hpp"

namespace gate::limiter {

struct RateFields {
    std::string policy{};       // RateLimit-Policy: "global";q=10000;w=1, "username";q=600;w=60
    std::string ratelimit{};    // RateLimit: "global";r=9999;t=1, "username";r=599;t=1
    std::string retry_after{};  // Retry-After: whole seconds, rounded up (only for a denial)
};

RateFields rate_fields(const std::vector<PlannedLimit> &limits, const std::vector<TripleDecision> &each,
                       const TripleDecision &overall);

// The denied limit that keeps the request out longest (the 429 body's "limit"): its display name.
std::string longest_denial(const std::vector<PlannedLimit> &limits, const std::vector<TripleDecision> &each);

}  // namespace gate::limiter
