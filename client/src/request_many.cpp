// Limiter::request_many: the batch call's argument checks and parameters, onto LimiterCore.
#include <optional>
#include <stdexcept>

#include "array_params.hpp"
#include "limiter_core.hpp"
#include "pg_ratelimit/errors.hpp"
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
    // What the server would refuse, refused before the first call: with Options::partitions the keys
    // before a bad one would otherwise be decided (and committed) on their partitions, where a single
    // server refuses the whole call.
    for (std::size_t i = 0; i < keys.size(); ++i) {
        detail::require_no_nul(keys[i], ("key " + std::to_string(i + 1)).c_str());
        if (keys[i].size() > 1024)
            throw InvalidArgument("ERROR:  rate limit key is too long\nDETAIL:  Key " + std::to_string(i + 1) + " is " +
                                      std::to_string(keys[i].size()) + " bytes; the maximum is 1024.\n",
                                  "", "22001");
    }
    if (costs != nullptr)
        for (const double cost : *costs)
            if (!(cost >= 1e-9 && cost <= 1e12))
                throw InvalidArgument("ERROR:  cost must be between 1e-09 and 1e+12\n", "", "22023");
    if (keys.empty()) return std::nullopt;
    detail::BatchArgs args{keys, limit, compat::binary_param(detail::text_array_param(keys))};
    if (costs != nullptr) args.costs_param = compat::binary_param(detail::float8_array_param(*costs));
    args.costs = costs;
    return args;
}

// The pooled batch, one call per partition holding some of the keys, in partition order; the decisions
// put back in the order given. Every key and cost is checked before the first call.
std::vector<Decision> pooled_batch(detail::LimiterCore &core, const std::vector<std::string> &keys,
                                   const std::string &limit, const std::vector<double> *costs) {
    const auto all = batch_args(keys, limit, costs);
    if (!all) return {};
    if (core.partitions() == 1) return core.pooled_many(*all, 0);
    std::vector<std::vector<std::size_t>> positions(core.partitions());
    for (std::size_t i = 0; i < keys.size(); ++i) positions[core.partition_of(keys[i])].push_back(i);
    std::vector<Decision> decisions(keys.size());
    for (std::size_t partition = 0; partition < positions.size(); ++partition) {
        if (positions[partition].empty()) continue;
        std::vector<std::string> part_keys;
        std::vector<double> part_costs;
        for (const std::size_t i : positions[partition]) {
            part_keys.push_back(keys[i]);
            if (costs != nullptr) part_costs.push_back((*costs)[i]);
        }
        const auto part = batch_args(part_keys, limit, costs != nullptr ? &part_costs : nullptr);
        std::vector<Decision> part_decisions = core.pooled_many(*part, partition);
        for (std::size_t n = 0; n < part_decisions.size(); ++n)
            decisions[positions[partition][n]] = std::move(part_decisions[n]);
    }
    return decisions;
}

}  // namespace

std::vector<Decision> Limiter::request_many(const std::vector<std::string> &keys, const std::string &limit) {
    return pooled_batch(*core_, keys, limit, nullptr);
}

std::vector<Decision> Limiter::request_many(const std::vector<std::string> &keys, const std::string &limit,
                                            const std::vector<double> &costs) {
    return pooled_batch(*core_, keys, limit, &costs);
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
