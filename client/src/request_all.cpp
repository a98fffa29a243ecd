// Limiter::request_all: the checks made before anything is sent and the parameters, onto LimiterCore.
#include <stdexcept>

#include "array_params.hpp"
#include "limiter_core.hpp"
#include "pg_ratelimit/limiter.hpp"
#include "translate.hpp"

namespace pg_ratelimit {
namespace {

// The three arrays, encoded once for every attempt.
detail::AllArgs all_args(const std::vector<LimitRequest> &requests) {
    if (requests.empty())
        throw std::invalid_argument(
            "pg_ratelimit: request_all needs at least one request (all of nothing is a mistake)");
    std::vector<std::string> keys;
    std::vector<std::string> limits;
    std::vector<double> costs;
    keys.reserve(requests.size());
    limits.reserve(requests.size());
    costs.reserve(requests.size());
    for (std::size_t i = 0; i < requests.size(); ++i) {
        const std::string position = std::to_string(i + 1);
        detail::require_no_nul(requests[i].key, ("key " + position).c_str());
        detail::require_no_nul(requests[i].limit, ("limit name " + position).c_str());
        keys.push_back(requests[i].key);
        limits.push_back(requests[i].limit);
        costs.push_back(requests[i].cost);
    }
    return detail::AllArgs{requests, compat::binary_param(detail::text_array_param(keys)),
                           compat::binary_param(detail::text_array_param(limits)),
                           compat::binary_param(detail::float8_array_param(costs))};
}

}  // namespace

AllDecision Limiter::request_all(const std::vector<LimitRequest> &requests) {
    return core_->pooled_all(all_args(requests));
}

AllDecision Limiter::request_all(pqxx::transaction_base &tx, const std::vector<LimitRequest> &requests) {
    return core_->in_transaction_all(tx, all_args(requests));
}

}  // namespace pg_ratelimit
