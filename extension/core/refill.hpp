// The two things that differ between algorithms: how a stored balance grows until now, and how long
// until a given number of units has been added. Everything else (admission, reservations, refunds)
// is shared in decision.cpp.
#pragma once

#include "core/limit.hpp"

namespace pg_ratelimit::core {

// A key's balance at an instant, after refill, before the call's own consumption.
struct Level {
    double value;
    Micros at;  // max(now, stored ts): the instant the key is evaluated at
};

[[nodiscard]] Level token_bucket_level(const Limit &limit, const State &stored, Micros now) noexcept;
// How long until `units` more have been added. Both treat a shortfall within `tolerance` as covered,
// like admission does, so float noise never pushes a wait one microsecond or one window too far.
[[nodiscard]] Micros token_bucket_time_to_gain(const Limit &limit, double units, double tolerance) noexcept;

[[nodiscard]] Level fixed_window_level(const Limit &limit, const State &stored, Micros now, Micros origin) noexcept;
[[nodiscard]] Micros fixed_window_time_to_gain(const Limit &limit, double units, double tolerance, Micros at,
                                               Micros origin) noexcept;

// ceil(micros) clamped to [0, MAX_DURATION]; NaN and infinities clamp too.
[[nodiscard]] Micros clamp_duration(double micros) noexcept;

// a - b without overflow: saturates at the int64 limits (only reachable with instants hundreds of
// thousands of years apart, at the ends of PostgreSQL's timestamp range).
[[nodiscard]] Micros saturating_sub(Micros a, Micros b) noexcept;
[[nodiscard]] Micros saturating_add(Micros a, Micros b) noexcept;

}  // namespace pg_ratelimit::core
