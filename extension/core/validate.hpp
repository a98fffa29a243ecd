// Input validation of the pure model. The glue turns each problem into an ERROR with its SQLSTATE
// before anything is written; the core functions assume validated input.
#pragma once

#include "core/limit.hpp"

namespace pg_ratelimit::core {

enum class LimitProblem : std::uint8_t {
    none,
    rate,                  // NaN or outside [MIN_UNITS, MAX_UNITS]
    period,                // <= 0
    period_too_long,       // > MAX_PERIOD
    capacity,              // NaN or outside [MIN_UNITS, MAX_UNITS]
    max_reserved,          // NaN or < 0 (+infinity means unlimited)
    start_needs_window,    // start given to an algorithm without a window grid
    sliding_capacity,      // sliding window: capacity differs from rate
    sliding_reservations,  // sliding window: max_reserved other than 0
    sliding_period,        // sliding window: period below MIN_SLIDING_PERIOD
    jitter,                // outside [0, MAX_JITTER]
    start_out_of_range,    // further than MAX_START_OFFSET from 2000-01-01
    shards,                // outside [1, MAX_SHARDS]
    shards_too_small,      // rate / shards or capacity / shards below MIN_UNITS
    calendar_algorithm,    // a calendar period for an algorithm other than the fixed window
    calendar_start,        // a calendar period with a start (calendar windows open at local midnight)
    calendar_count,        // a calendar period of no units, or longer than 100 years, or without a zone
    concurrency_slots,     // concurrency: rate not a whole number in [1, MAX_LEASE_SLOTS]
    concurrency_shape,     // concurrency: capacity other than rate, reservations, shards or another storage
};

enum class CostProblem : std::uint8_t {
    none,
    not_positive_finite,  // NaN or outside [MIN_UNITS, MAX_UNITS]
    exceeds_capacity,     // can never succeed, even on a full key (a full shard, for a sharded limit)
};

// Keeps window arithmetic far from int64 overflow: about 10,000 years either side of 2000.
inline constexpr Micros MAX_START_OFFSET = Micros{10000} * 366 * 86400 * 1000000;

// A unit count within [MIN_UNITS, MAX_UNITS] (rate, capacity, cost).
[[nodiscard]] bool valid_units(double units) noexcept;

[[nodiscard]] LimitProblem validate_limit(const Limit &limit) noexcept;
[[nodiscard]] CostProblem validate_cost(const Limit &limit, double cost) noexcept;

}  // namespace pg_ratelimit::core
