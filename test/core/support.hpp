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

// GCRA: the token bucket's parameters (redis-cell's max_burst is capacity - 1).
inline Limit Gcra(double rate, Micros period, double capacity, double max_reserved = 0) {
    Limit limit = TokenBucket(rate, period, capacity, max_reserved);
    limit.algorithm = Algorithm::gcra;
    return limit;
}

// Sliding window on the grid start + k * period; its capacity is its rate, it takes no reservations.
inline Limit SlidingWindow(double rate, Micros period, Micros start = 0) {
    Limit limit = FixedWindow(rate, period, rate, start);
    limit.algorithm = Algorithm::sliding_window;
    return limit;
}

// Sliding window at a per-key offset (no start).
inline Limit SlidingWindowPerKey(double rate, Micros period) {
    Limit limit = SlidingWindow(rate, period);
    limit.has_start = false;
    return limit;
}

// Every algorithm, for parameterised suites, and their names (as rate_limit_define spells them).
inline constexpr Algorithm kAllAlgorithms[] = {Algorithm::token_bucket, Algorithm::fixed_window, Algorithm::gcra,
                                               Algorithm::sliding_window};

inline const char *AlgorithmName(Algorithm algorithm) {
    switch (algorithm) {
        case Algorithm::token_bucket:
            return "token_bucket";
        case Algorithm::fixed_window:
            return "fixed_window";
        case Algorithm::gcra:
            return "gcra";
        case Algorithm::sliding_window:
            return "sliding_window";
        case Algorithm::concurrency:  // not in kAllAlgorithms: no rate decisions (core/leases.hpp)
            return "concurrency";
    }
    return "unknown";
}

// A request without reservation, for a key hashing to 0 (the grid of per-key windows starts at 0).
inline Outcome Take(const Limit &limit, const State *stored, Micros now, double cost = 1) {
    return request(limit, stored, now, cost, /*reserve=*/false, window_origin(limit, 0));
}

}  // namespace pg_ratelimit::core
