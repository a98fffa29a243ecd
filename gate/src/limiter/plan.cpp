#include "limiter/plan.hpp"

#include "request_fields/extract.hpp"

namespace gate::limiter {
namespace {

bool usable(const std::string &key) { return key.size() <= MAX_KEY_BYTES && key.find('\0') == std::string::npos; }

}  // namespace

Plan make_plan(const std::vector<const ConfiguredLimit *> &route_limits, const request_fields::RequestView &request,
               const std::vector<MapLimit> &map_limits) {
    Plan plan;
    for (const ConfiguredLimit *limit : route_limits) {
        const config::LimitConfig &config = *limit->config;
        std::string key = config.key;
        if (config.request_field) {
            auto value = request_fields::extract(*config.request_field, request);
            if (!value) {
                switch (config.on_missing) {
                    case config::OnMissing::skip:
                        continue;
                    case config::OnMissing::reject:
                        plan.rejected = config.key;
                        return plan;
                    case config::OnMissing::constant:
                        value = config.missing_key;
                        break;
                }
            }
            key = std::move(*value);
        }
        if (!usable(key)) {
            plan.bad_key = config.key;
            return plan;
        }
        plan.limits.push_back({&limit->spec, std::move(key), config.key});
    }
    for (const MapLimit &limit : map_limits) {
        if (!usable(limit.key)) {
            plan.bad_key = limit.display;
            return plan;
        }
        plan.limits.push_back({&limit.spec, limit.key, limit.display});
    }
    return plan;
}

}  // namespace gate::limiter
