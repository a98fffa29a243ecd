// Which (key, limit) pairs a request is decided on: every limit of its URL whose key the request yields
// (a request field's raw value; a limit without one: its own key), then the map endpoint's.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "config/config.hpp"
#include "limiter/decision.hpp"
#include "limiter/limit_spec.hpp"
#include "request_fields/request_view.hpp"

namespace gate::limiter {

// The longest key the extension takes (rate_limit_request: 1024 bytes).
constexpr std::size_t MAX_KEY_BYTES = 1024;

// A limit of the file, with what the database knows of it.
struct ConfiguredLimit {
    const config::LimitConfig *config = nullptr;
    LimitSpec spec{};
    LimitSpec monitor_spec{};  // monitoring_twin(spec): what a URL in monitoring mode counts in
};

// A limit the map endpoint returned for a request.
struct MapLimit {
    LimitSpec spec{};
    LimitSpec monitor_spec{};  // monitoring_twin(spec)
    std::string key{};
    std::string display{};  // its comment, else its key: the name in the RateLimit fields
};

struct PlannedLimit {
    const LimitSpec *spec = nullptr;
    std::string key{};
    std::string display{};  // the limit's name in the RateLimit fields and the 429 body

    [[nodiscard]] Triple triple() const { return {key, spec->name, spec->storage == config::Storage::memory}; }
};

struct Plan {
    std::vector<PlannedLimit> limits{};
    std::string rejected{};  // a limit whose field is missing, with on_missing: reject (400)
    // A limit whose key the database cannot take: over 1024 bytes, a NUL byte, or not valid UTF-8 (400). Such a
    // key never reaches the database: its refusal (22021) would otherwise be a limiter failure, and with
    // failure_mode open a client could choose to be let through unlimited.
    std::string bad_key{};
};

// Well-formed UTF-8 (RFC 3629: no overlong forms, no surrogates, nothing above U+10FFFF).
bool valid_utf8(std::string_view text);

// monitoring: the URL is in monitoring mode; its requests are decided on each limit's monitor_spec.
Plan make_plan(const std::vector<const ConfiguredLimit *> &route_limits, const request_fields::RequestView &request,
               const std::vector<MapLimit> &map_limits, bool monitoring = false);

}  // namespace gate::limiter
