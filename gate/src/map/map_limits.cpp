#include "map/map_limits.hpp"

#include <cstdio>
#include <nlohmann/json.hpp>

#include "config/duration.hpp"

namespace gate::map {
namespace {

using nlohmann::json;

std::optional<std::chrono::microseconds> duration_of(const json &value, std::string *error) {
    if (value.is_number()) return config::seconds_to_duration(value.get<double>(), error);
    if (value.is_string()) return config::parse_duration(value.get<std::string>(), error);
    *error = "a number of seconds or a duration is expected";
    return std::nullopt;
}

}  // namespace

std::string map_limit_name(const limiter::LimitSpec &spec) {
    char burst[64];
    std::snprintf(burst, sizeof burst, "%.15g", spec.burst);
    return std::string("gate_map_") + config::to_string(spec.algorithm) + "_" + config::to_string(spec.storage) + "_" +
           burst + "_per_" + config::format_duration(spec.window) + "_throttle_" +
           config::format_duration(spec.max_throttle);
}

std::optional<std::vector<limiter::MapLimit>> parse_map_limits(std::string_view body,
                                                               const config::MapEndpointConfig &defaults,
                                                               std::string *error) {
    const json document = json::parse(body, nullptr, false);
    if (document.is_discarded() || !document.is_object() || !document.contains("limits") ||
        !document["limits"].is_array()) {
        *error = "the answer is not a JSON object with a \"limits\" list";
        return std::nullopt;
    }
    if (document["limits"].size() > MAX_MAP_LIMITS) {
        *error = "more than " + std::to_string(MAX_MAP_LIMITS) + " limits in one answer";
        return std::nullopt;
    }
    std::vector<limiter::MapLimit> out;
    std::size_t index = 0;
    for (const auto &item : document["limits"]) {
        const std::string where = "limits[" + std::to_string(index++) + "]: ";
        if (!item.is_object() || !item.contains("key") || !item["key"].is_string()) {
            *error = where + "an object with a string \"key\" is expected";
            return std::nullopt;
        }
        limiter::MapLimit limit;
        limit.key = item["key"].get<std::string>();
        // A key the database cannot take is the endpoint's fault (failure_mode), not the client's (400).
        if (limit.key.size() > limiter::MAX_KEY_BYTES || limit.key.find('\0') != std::string::npos ||
            !limiter::valid_utf8(limit.key)) {
            *error = where + "a key of more than " + std::to_string(limiter::MAX_KEY_BYTES) +
                     " bytes, with a NUL byte, or not valid UTF-8";
            return std::nullopt;
        }
        limit.display =
            item.contains("comment") && item["comment"].is_string() ? item["comment"].get<std::string>() : limit.key;
        std::string why;
        if (!item.contains("window")) {
            *error = where + "no window";
            return std::nullopt;
        }
        const auto window = duration_of(item["window"], &why);
        if (!window || window->count() <= 0) {
            *error = where + "window: " + (why.empty() ? "must be longer than 0" : why);
            return std::nullopt;
        }
        limit.spec.window = *window;
        const bool has_burst = item.contains("burst");
        const bool has_interval = item.contains("interval");
        if (has_burst == has_interval) {
            *error = where + "give burst or interval (one of them)";
            return std::nullopt;
        }
        if (has_burst) {
            if (!item["burst"].is_number() || item["burst"].get<double>() < 1 || item["burst"].get<double>() > 1e12) {
                *error = where + "burst must be a number from 1 to 1e12";
                return std::nullopt;
            }
            limit.spec.burst = item["burst"].get<double>();
        } else {
            const auto interval = duration_of(item["interval"], &why);
            if (!interval || interval->count() <= 0 || *interval > *window) {
                *error = where + "interval: " + (why.empty() ? "must be longer than 0 and at most the window" : why);
                return std::nullopt;
            }
            limit.spec.burst = static_cast<double>(window->count()) / static_cast<double>(interval->count());
        }
        if (item.contains("max_throttle")) {
            const auto throttle = duration_of(item["max_throttle"], &why);
            if (!throttle) {
                *error = where;
                *error += "max_throttle: " + why;
                return std::nullopt;
            }
            limit.spec.max_throttle = *throttle;
        }
        limit.spec.algorithm = defaults.algorithm;
        limit.spec.storage = defaults.storage;
        if (item.contains("algorithm")) {
            const std::string a = item["algorithm"].is_string() ? item["algorithm"].get<std::string>() : "";
            bool found = false;
            for (const auto candidate : {config::Algorithm::gcra, config::Algorithm::token_bucket,
                                         config::Algorithm::fixed_window, config::Algorithm::sliding_window}) {
                if (a == config::to_string(candidate)) {
                    limit.spec.algorithm = candidate;
                    found = true;
                }
            }
            if (!found) {
                *error = where + "unknown algorithm";
                return std::nullopt;
            }
        }
        if (item.contains("storage")) {
            const std::string s = item["storage"].is_string() ? item["storage"].get<std::string>() : "";
            bool found = false;
            for (const auto candidate :
                 {config::Storage::durable, config::Storage::unlogged, config::Storage::memory}) {
                if (s == config::to_string(candidate)) {
                    limit.spec.storage = candidate;
                    found = true;
                }
            }
            if (!found) {
                *error = where + "unknown storage";
                return std::nullopt;
            }
        }
        if (limit.spec.algorithm == config::Algorithm::sliding_window) limit.spec.max_throttle = {};
        limit.spec.name = map_limit_name(limit.spec);
        limit.monitor_spec = limiter::monitoring_twin(limit.spec);
        out.push_back(std::move(limit));
    }
    return out;
}

}  // namespace gate::map
