// Fixed window: rate units arrive at each window boundary, capped at capacity. The boundaries are
// origin + k * period, or a calendar's local midnights (calendar.hpp).
#include <algorithm>
#include <cmath>

#include "core/calendar.hpp"
#include "core/refill.hpp"

namespace pg_ratelimit::core {
namespace {

Wide window_of(const Limit &limit, Micros t, Micros origin) noexcept {
    if (limit.calendar.unit != CalendarUnit::none) return calendar_index(limit.calendar, t);
    return window_index(t, origin, limit.period);
}

Micros opening_of(const Limit &limit, Wide window, Micros origin) noexcept {
    if (limit.calendar.unit != CalendarUnit::none) return calendar_start(limit.calendar, window);
    return window_start(window, origin, limit.period);
}

Level level(const Limit &limit, const State &stored, Micros now, Micros origin) noexcept {
    const Micros at = std::max(now, stored.ts);
    const Wide windows = window_of(limit, at, origin) - window_of(limit, stored.ts, origin);
    return {std::min(stored.value + static_cast<double>(windows) * limit.rate, limit.capacity), at};
}

// The opening of the window in which the needed number of windows have passed.
Micros guess(const Limit &limit, const State &, double shortfall, Micros at, Micros origin) noexcept {
    const double windows = std::ceil(shortfall / limit.rate);
    const Wide target = window_of(limit, at, origin) + static_cast<Wide>(std::min(windows, 1e18));
    return std::max(opening_of(limit, target, origin), at);
}

}  // namespace

const RefillRules fixed_window_rules = {level, store_balance, guess};

}  // namespace pg_ratelimit::core
