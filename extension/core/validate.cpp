#include "core/validate.hpp"

#include <cmath>

#include "core/algorithms.hpp"
#include "core/calendar.hpp"
#include "core/leases.hpp"
#include "core/shards.hpp"

namespace pg_ratelimit::core {
bool valid_units(double units) noexcept { return units >= MIN_UNITS && units <= MAX_UNITS; }  // false for NaN

LimitProblem validate_limit(const Limit &limit) noexcept {
    if (!valid_units(limit.rate)) return LimitProblem::rate;
    if (limit.period <= 0) return LimitProblem::period;
    if (limit.period > MAX_PERIOD) return LimitProblem::period_too_long;
    if (!valid_units(limit.capacity)) return LimitProblem::capacity;
    const bool unlimited = std::isinf(limit.max_reserved) && limit.max_reserved > 0;
    if (!unlimited && !(limit.max_reserved >= 0 && limit.max_reserved <= MAX_UNITS)) return LimitProblem::max_reserved;
    if (limit.algorithm == Algorithm::sliding_window) {
        if (limit.capacity != limit.rate) return LimitProblem::sliding_capacity;
        if (limit.max_reserved != 0) return LimitProblem::sliding_reservations;
        if (limit.period < MIN_SLIDING_PERIOD) return LimitProblem::sliding_period;
    }
    if (limit.algorithm == Algorithm::concurrency) {
        if (!(limit.rate >= 1 && limit.rate <= MAX_LEASE_SLOTS && limit.rate == std::floor(limit.rate)))
            return LimitProblem::concurrency_slots;
        if (limit.capacity != limit.rate || limit.max_reserved != 0 || limit.shards != 1 ||
            limit.storage != Storage::durable)
            return LimitProblem::concurrency_shape;
    }
    if (const Calendar &calendar = limit.calendar; calendar.unit != CalendarUnit::none) {
        if (limit.algorithm != Algorithm::fixed_window) return LimitProblem::calendar_algorithm;
        if (limit.has_start) return LimitProblem::calendar_start;
        const std::int32_t most = calendar.unit == CalendarUnit::month  ? MAX_CALENDAR_MONTHS
                                  : calendar.unit == CalendarUnit::week ? MAX_CALENDAR_WEEKS
                                                                        : MAX_CALENDAR_DAYS;
        if (calendar.count < 1 || calendar.count > most || calendar.zone == nullptr)
            return LimitProblem::calendar_count;
    }
    if (limit.has_start) {
        if (!uses_window_grid(limit.algorithm)) return LimitProblem::start_needs_window;
        if (limit.start > MAX_START_OFFSET || limit.start < -MAX_START_OFFSET) return LimitProblem::start_out_of_range;
    }
    if (limit.shards < 1 || limit.shards > MAX_SHARDS) return LimitProblem::shards;
    if (limit.rate / limit.shards < MIN_UNITS || limit.capacity / limit.shards < MIN_UNITS)
        return LimitProblem::shards_too_small;
    if (limit.jitter < 0 || limit.jitter > MAX_JITTER) return LimitProblem::jitter;
    return LimitProblem::none;
}

CostProblem validate_cost(const Limit &limit, double cost) noexcept {
    if (!valid_units(cost)) return CostProblem::not_positive_finite;
    const Limit shard = shard_limit(limit);  // the limit itself when not sharded
    if (cost > shard.capacity + tolerance(shard)) return CostProblem::exceeds_capacity;
    return CostProblem::none;
}

}  // namespace pg_ratelimit::core
