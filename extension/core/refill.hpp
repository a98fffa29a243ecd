// What differs between algorithms: what a key's two stored numbers mean (how the balance they hold grows
// with time, and how a new balance is written back), and a first guess of when a balance will have grown
// by a given amount. Everything else (admission, reservations, refunds, the exact waits) is shared in
// decision.cpp, which only ever sees balances. One file per algorithm implements these.
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
    // The state to store so that the key holds `balance` at `before.at`, where `before` is what level()
    // gave for `stored` (nullptr: the key had no row) and `balance` <= capacity. Reading it back at
    // before.at never gives more than `balance` (an encoding may round, always towards less).
    State (*store)(const Limit &limit, const State *stored, const Level &before, double balance,
                   Micros origin) noexcept;
    // A guess of the instant after `at` at which the balance of `stored` at `at` has grown by `shortfall`
    // (> 0) units. Only a starting point: decision.cpp then finds the exact microsecond by evaluating level,
    // so rounding here can never make a reported wait wrong, only the search longer.
    Micros (*guess)(const Limit &limit, const State &stored, double shortfall, Micros at, Micros origin) noexcept;
};

// Token bucket: continuous refill at rate / period (token_bucket.cpp).
extern const RefillRules token_bucket_rules;
// Fixed window: rate units at each boundary origin + k * period (fixed_window.cpp).
extern const RefillRules fixed_window_rules;
// GCRA: the token bucket's balances, stored as the theoretical arrival time (gcra.cpp).
extern const RefillRules gcra_rules;
// Sliding window: the previous window's count weighted by its remaining overlap (sliding_window.cpp).
extern const RefillRules sliding_window_rules;

// A sliding-window key's state under `to`, both of its counts scaled by `factor`, at now (rescale.hpp).
// When the window grid changes (another period or origin), the key's use at now is kept as the new current
// window's count: it then weighs in full until that window ends, never less than before.
[[nodiscard]] State sliding_window_scaled(const Limit &from, const Limit &to, const State &stored, Micros now,
                                          Micros from_origin, Micros to_origin, double factor) noexcept;

// The rules of an algorithm.
[[nodiscard]] const RefillRules &rules_of(Algorithm algorithm) noexcept;

// The balance/state pair the token bucket and the fixed window store: the balance itself, at `at`.
[[nodiscard]] State store_balance(const Limit &limit, const State *stored, const Level &before, double balance,
                                  Micros origin) noexcept;

// floor((t - origin) / period) for any sign of t - origin, in 128 bits: t - origin and the window
// arithmetic can exceed int64 at the ends of PostgreSQL's timestamp range.
using Wide = __int128;
[[nodiscard]] Wide window_index(Micros t, Micros origin, Micros period) noexcept;
// origin + index * period, clamped to the int64 range.
[[nodiscard]] Micros window_start(Wide index, Micros origin, Micros period) noexcept;

// a - b and a + b without overflow: they saturate at the int64 limits (only reachable with instants
// hundreds of thousands of years apart, at the ends of PostgreSQL's timestamp range).
[[nodiscard]] Micros saturating_sub(Micros a, Micros b) noexcept;
[[nodiscard]] Micros saturating_add(Micros a, Micros b) noexcept;

// A double number of microseconds as an instant offset: rounded up, clamped to [0, MAX_DURATION]
// (NaN and infinities clamp too).
[[nodiscard]] Micros clamp_duration(double micros) noexcept;

}  // namespace pg_ratelimit::core
