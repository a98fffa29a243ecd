// What the core suites share: time units, a realistic "now", limit builders and the plain request.
#pragma once

#include <limits>

#include "core/algorithms.hpp"

namespace pg_ratelimit::core {

constexpr Micros kMs = 1000;
constexpr Micros kSec = 1000 * kMs;
constexpr Micros kMin = 60 * kSec;
constexpr Micros kHour = 60 * kMin;
constexpr Micros kDay = 24 * kHour;
constexpr Micros kYear = 365 * kDay;
// A realistic "now": about mid-2024 in PostgreSQL's epoch (2000-01-01).
constexpr Micros kT0 = Micros{770'000'000} * kSec;
constexpr double kInf = std::numeric_limits<double>::infinity();

inline Limit TokenBucket(double rate, Micros period, double capacity, double max_reserved = 0) {
    Limit limit;
    limit.algorithm = Algorithm::token_bucket;
    limit.rate = rate;
    limit.period = period;
    limit.capacity = capacity;
    limit.max_reserved = max_reserved;
    return limit;
}

// Windows on the grid start + k * period.
inline Limit FixedWindow(double rate, Micros period, double capacity, Micros start = 0, double max_reserved = 0) {
    Limit limit = TokenBucket(rate, period, capacity, max_reserved);
    limit.algorithm = Algorithm::fixed_window;
    limit.has_start = true;
    limit.start = start;
    return limit;
}

// Windows at a per-key offset (no start).
inline Limit FixedWindowPerKey(double rate, Micros period, double capacity) {
    Limit limit = FixedWindow(rate, period, capacity);
    limit.has_start = false;
    return limit;
}

// Either algorithm, fixed windows on the grid k * period.
inline Limit Make(Algorithm algorithm, double rate, Micros period, double capacity, double max_reserved = 0) {
    return algorithm == Algorithm::token_bucket ? TokenBucket(rate, period, capacity, max_reserved)
                                                : FixedWindow(rate, period, capacity, 0, max_reserved);
}

// A request without reservation, for a key hashing to 0 (the grid of per-key windows starts at 0).
inline Outcome Take(const Limit &limit, const State *stored, Micros now, double cost = 1) {
    return request(limit, stored, now, cost, /*reserve=*/false, window_origin(limit, 0));
}

}  // namespace pg_ratelimit::core
