#include "limiter/rate_headers.hpp"

#include <pg_ratelimit/decision.hpp>

namespace gate::limiter {
namespace {

pg_ratelimit::Decision client_decision(const PlannedLimit &limit, const TripleDecision &d) {
    pg_ratelimit::Decision out;
    out.allowed = d.allowed;
    out.remaining = d.remaining;
    out.retry_after = d.retry_after;
    out.reset_after = d.reset_after;
    out.shadow_denied = d.shadow_denied;
    out.limit = limit.display;
    // The gate knows its limits' numbers (it defined them): burst per window, capacity burst.
    pg_ratelimit::Policy policy;
    policy.rate = limit.spec->burst;
    policy.period = limit.spec->window;
    policy.capacity = limit.spec->burst;
    policy.algorithm = config::to_string(limit.spec->algorithm);
    out.policy = policy;
    return out;
}

}  // namespace

RateFields rate_fields(const std::vector<PlannedLimit> &limits, const std::vector<TripleDecision> &each,
                       const TripleDecision &overall) {
    RateFields out;
    for (std::size_t i = 0; i < limits.size() && i < each.size(); ++i) {
        const auto decision = client_decision(limits[i], each[i]);
        // A structured-field list (RFC 8941): items separated by ", ".
        if (i > 0) {
            out.policy += ", ";
            out.ratelimit += ", ";
        }
        out.policy += pg_ratelimit::ratelimit_policy_field(decision);
        out.ratelimit += pg_ratelimit::ratelimit_field(decision);
    }
    if (!overall.allowed) {
        pg_ratelimit::Decision whole;
        whole.retry_after = overall.retry_after;
        out.retry_after = pg_ratelimit::retry_after_field(whole);
    }
    return out;
}

std::string longest_denial(const std::vector<PlannedLimit> &limits, const std::vector<TripleDecision> &each) {
    std::string name;
    std::chrono::microseconds longest{-1};
    for (std::size_t i = 0; i < limits.size() && i < each.size(); ++i) {
        if (!each[i].allowed && each[i].retry_after > longest) {
            longest = each[i].retry_after;
            name = limits[i].display;
        }
    }
    return name;
}

}  // namespace gate::limiter
