#include "admin/health.hpp"

namespace gate::admin {

Health health(const config::GateConfig &config, int ready_connections) {
    Health out;
    if (!config.ratelimit) {
        out.body = "{\"status\": \"ok\", \"database\": \"unused\"}\n";
        return out;
    }
    const bool up = ready_connections > 0;
    const bool closed = config.ratelimit->limiter.failure_mode == config::FailureMode::closed;
    out.status = up || !closed ? 200 : 503;
    out.body = std::string("{\"status\": \"") +
               (up       ? "ok"
                : closed ? "unavailable"
                         : "degraded") +
               "\", \"database\": \"" + (up ? "up" : "down") +
               "\", \"connections_ready\": " + std::to_string(ready_connections) + ", \"failure_mode\": \"" +
               (closed ? "closed" : "open") + "\"}\n";
    return out;
}

}  // namespace gate::admin
