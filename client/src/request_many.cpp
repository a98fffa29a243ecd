// Limiter::request_many: the batch call's argument checks and parameters, onto LimiterCore.
#include <optional>
#include <stdexcept>

#include "array_params.hpp"
#include "limiter_core.hpp"
#include "pg_ratelimit/limiter.hpp"
#include "translate.hpp"

namespace pg_ratelimit {
namespace {

// The checks made before anything is sent, and the parameters, encoded once for every attempt. nullopt:
// keys is empty, nothing to send.
std::optional<detail::BatchArgs> batch_args(const std::vector<std::string> &keys, const std::string &limit,
                                            const std::vector<double> *costs) {
    if (costs != nullptr && costs->size() != keys.size())
        throw std::invalid_argument("pg_ratelimit: request_many got " + std::to_string(keys.size()) + " keys and " +
                                    std::to_string(costs->size()) + " costs; there must be one cost per key");
    detail::require_no_nul(limit, "limit name");
    for (std::size_t i = 0; i < keys.size(); ++i)
        detail::require_no_nul(keys[i], ("key " + std::to_string(i + 1)).c_str());
    if (keys.empty()) return std::nullopt;
    detail::BatchArgs args{keys, limit, compat::binary_param(detail::text_array_param(keys))};
    if (costs != nullptr) args.costs_param = compat::binary_param(detail::float8_array_param(*costs));
    args.costs = costs;
    return args;
}

}  // namespace

std::vector<Decision> Limiter::request_many(const std::vector<std::string> &keys, const std::string &limit) {
    const auto args = batch_args(keys, limit, nullptr);
    return args ? core_->pooled_many(*args) : std::vector<Decision>{};
}

std::vector<Decision> Limiter::request_many(const std::vector<std::string> &keys, const std::string &limit,
                                            const std::vector<double> &costs) {
    const auto args = batch_args(keys, limit, &costs);
    return args ? core_->pooled_many(*args) : std::vector<Decision>{};
}

std::vector<Decision> Limiter::request_many(pqxx::transaction_base &tx, const std::vector<std::string> &keys,
                                            const std::string &limit) {
    const auto args = batch_args(keys, limit, nullptr);
    return args ? core_->in_transaction_many(tx, *args) : std::vector<Decision>{};
}

std::vector<Decision> Limiter::request_many(pqxx::transaction_base &tx, const std::vector<std::string> &keys,
                                            const std::string &limit, const std::vector<double> &costs) {
    const auto args = batch_args(keys, limit, &costs);
    return args ? core_->in_transaction_many(tx, *args) : std::vector<Decision>{};
}

}  // namespace pg_ratelimit
