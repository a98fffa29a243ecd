// A limit as the database knows it: what rate_limit_define is given.
#pragma once

#include <chrono>
#include <string>
#include <vector>

#include "config/config.hpp"

namespace gate::limiter {

struct LimitSpec {
    std::string name{};  // gate_<key>, or gate_map_... for the map endpoint's
    double burst = 1;    // rate per window, and capacity
    std::chrono::microseconds window{1'000'000};
    std::chrono::microseconds max_throttle{0};
    config::Algorithm algorithm = config::Algorithm::gcra;
    config::Storage storage = config::Storage::durable;

    // The deepest debt a throttled request may leave: max_throttle's worth of refill (none for a sliding
    // window, which takes no reservations).
    [[nodiscard]] double max_reserved() const;
    // rate_limit_define's parameters, as define_sql() numbers them (text).
    [[nodiscard]] std::vector<std::string> define_params() const;
    // "burst 3 per 1h, gcra, durable, max_throttle 0s": for messages.
    [[nodiscard]] std::string describe() const;
};

LimitSpec spec_of(const config::LimitConfig &limit);

// The same numbers under the name gmon_<...> (gate_x: gmon_x, gate_map_...: gmon_map_...): what a URL in
// monitoring mode counts its requests in. Its would-be denials then say what enforcing the limit would do
// to that URL's traffic, and its requests never spend an enforced URL's allowance of the same limit.
LimitSpec monitoring_twin(const LimitSpec &spec);

}  // namespace gate::limiter
