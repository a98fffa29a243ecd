// /healthz: 200 while the gate can serve its traffic as configured, 503 otherwise.
#pragma once

#include <string>

#include "config/config.hpp"

namespace gate::admin {

struct Health {
    unsigned status = 200;
    std::string body{};
};

// Without a ready database connection the gate still serves with failure_mode open (bypassing the limiter,
// and saying so): healthy, "database": "down". With failure_mode closed it answers 503 to limited URLs: unhealthy.
Health health(const config::GateConfig &config, int ready_connections);

}  // namespace gate::admin
