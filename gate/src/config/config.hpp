// The gate's configuration, as loaded and checked from the YAML file (the seed's shape: docs/gate.md).
#pragma once

#include <chrono>
#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "config/address.hpp"
#include "jwt/verify.hpp"
#include "request_fields/json_path.hpp"

namespace gate::config {

using std::chrono::microseconds;

enum class Storage { durable, unlogged, memory };
enum class Algorithm { gcra, token_bucket, fixed_window, sliding_window };
enum class FailureMode { open, closed };
enum class OnMissing { skip, reject, constant };

const char *to_string(Storage storage);
const char *to_string(Algorithm algorithm);

// One limit of the plugin: burst requests per window for one key (or per value of a request field).
struct LimitConfig {
    std::string key{};  // "global", "username": the database limit is gate_<key>
    std::string comment{};
    double burst = 0;  // capacity, and requests per window (interval given: window / interval)
    microseconds window{0};
    microseconds max_throttle{0};  // 0: never throttled, denied at once
    std::optional<request_fields::FieldPath> request_field{};
    Storage storage = Storage::durable;
    Algorithm algorithm = Algorithm::gcra;
    OnMissing on_missing = OnMissing::skip;
    std::string missing_key{};  // on_missing: key:<constant>
    int line = 0;

    [[nodiscard]] std::string db_name() const { return "gate_" + key; }
};

struct LimiterConfig {
    std::string conninfo{};
    int pool_size = 4;
    std::string schema = "public";
    FailureMode failure_mode = FailureMode::open;
    bool pipeline = true;             // libpq pipeline mode on each connection
    microseconds timeout{1'000'000};  // a decision not answered by then: failure_mode
};

struct MapEndpointConfig {
    HttpUrl url{};
    microseconds cache_ttl{10'000'000};
    microseconds timeout{1'000'000};
    // The request identity the answers are cached under: method and path, plus these headers' values.
    std::vector<std::string> identity_headers{"authorization", "cookie"};
    Storage storage = Storage::durable;  // of the limits it returns (unless an answer names one)
    Algorithm algorithm = Algorithm::gcra;
};

struct RateLimitPlugin {
    std::string id = "ratelimit";
    bool enabled = false;  // the default of every URL
    LimiterConfig limiter{};
    std::vector<LimitConfig> limits{};
    std::optional<MapEndpointConfig> map_endpoint{};
    jwt::JwtSettings jwt{};
    bool needs_claims = false;  // some limit reads $.request.parsed_token
};

struct RouteConfig {
    std::string pattern{};       // glob on the path: '*/hello'
    std::string host_pattern{};  // glob on the Host (without port); empty: any
    HostPort target{};
    bool ratelimit = false;
    bool monitoring = false;
    std::vector<std::size_t> limits{};  // indexes into RateLimitPlugin::limits
    int line = 0;
};

struct GateConfig {
    std::string file{};
    HostPort listen{"127.0.0.1", 8080};
    std::optional<HostPort> admin_listen = HostPort{"127.0.0.1", 8081};
    int threads = 0;  // 0: one per core
    bool access_log = true;
    microseconds client_timeout{60'000'000};   // idle keep-alive, and a request's header
    microseconds backend_timeout{60'000'000};  // each read or write towards a backend
    std::size_t max_header_bytes = 16 * 1024;
    std::optional<RateLimitPlugin> ratelimit{};
    std::vector<RouteConfig> routes{};
};

}  // namespace gate::config
