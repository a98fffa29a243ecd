// The map endpoint's answer (the seed's webhook): {"limits": [{"key": "users/john.smith", "interval": 0.1,
// "window": 1, "max_throttle": 5}]}. Plain numbers are seconds (a duration text such as "500ms" is taken
// too); each limit gives burst or interval, not both. Optional: comment (its name in the RateLimit fields),
// algorithm and storage (default: the plugin's map_algorithm and map_storage).
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "config/config.hpp"
#include "limiter/plan.hpp"

namespace gate::map {

// The most limits one answer may give: an answer with more is a map failure (failure_mode).
constexpr std::size_t MAX_MAP_LIMITS = 32;

// The limits, or nothing and *error for an answer that is not exactly that shape, that has more than
// MAX_MAP_LIMITS limits, or a key the database cannot take (over 1024 bytes, a NUL, not UTF-8).
std::optional<std::vector<limiter::MapLimit>> parse_map_limits(std::string_view body,
                                                               const config::MapEndpointConfig &defaults,
                                                               std::string *error);

// The database limit the map endpoint's limits of these numbers share: gate_map_<algorithm>_<storage>_<burst>
// _per_<window>_throttle_<max_throttle>. Keys are the endpoint's own ("users/john.smith").
std::string map_limit_name(const limiter::LimitSpec &spec);

}  // namespace gate::map
