// What differs between algorithms: how a stored balance grows with time, and a first guess of when it
// will have grown by a given amount. Everything else (admission, reservations, refunds, the exact waits)
// is shared in decision.cpp. One file per algorithm implements these.
#pragma once

#include "core/limit.hpp"

namespace pg_ratelimit::core {

// A key's balance at an instant, after refill, before the call's own consumption.
struct Level {
    double value;
    Micros at;  // max(now, stored ts): the instant the key is evaluated at
};

struct RefillRules {
    // The balance of `stored` at `now`. Must be non-decreasing in now (decision.cpp searches it for the
    // first instant at which a condition holds) and never above capacity.
    Level (*level)(const Limit &limit, const State &stored, Micros now, Micros origin) noexcept;
    // A guess of the instant after `at` at which a balance of `value` at `at` has grown by `shortfall`
    // (> 0) units. Only a starting point: decision.cpp then finds the exact microsecond by evaluating level,
    // so rounding here can never make a reported wait wrong, only the search longer.
    Micros (*guess)(const Limit &limit, double shortfall, Micros at, Micros origin) noexcept;
};

// Token bucket: continuous refill at rate / period (token_bucket.cpp).
extern const RefillRules token_bucket_rules;
// Fixed window: rate units at each boundary origin + k * period (fixed_window.cpp).
extern const RefillRules fixed_window_rules;

// a - b and a + b without overflow: they saturate at the int64 limits (only reachable with instants
// hundreds of thousands of years apart, at the ends of PostgreSQL's timestamp range).
[[nodiscard]] Micros saturating_sub(Micros a, Micros b) noexcept;
[[nodiscard]] Micros saturating_add(Micros a, Micros b) noexcept;

// A double number of microseconds as an instant offset: rounded up, clamped to [0, MAX_DURATION]
// (NaN and infinities clamp too).
[[nodiscard]] Micros clamp_duration(double micros) noexcept;

}  // namespace pg_ratelimit::core
