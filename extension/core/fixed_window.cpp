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

// A calendar key stores the opening of its window, not the instant of its last call, and is read back as
// the window containing that opening plus this much: so that a session whose zone rules differ from the
// writer's (the time zone database was updated; each session loads a zone once) by less than this still
// finds the key in the same window, and refills it once, not at each session's midnight. Shorter than any
// calendar window (a day is at least 23 hours).
constexpr Micros CALENDAR_READ_MARGIN = Micros{11} * 3600 * 1000000;

Wide stored_window(const Limit &limit, const State &stored, Micros origin) noexcept {
    if (limit.calendar.unit != CalendarUnit::none)
        return calendar_index(limit.calendar, saturating_add(stored.ts, CALENDAR_READ_MARGIN));
    return window_index(stored.ts, origin, limit.period);
}

Level level(const Limit &limit, const State &stored, Micros now, Micros origin) noexcept {
    const Micros at = std::max(now, stored.ts);
    const Wide windows = window_of(limit, at, origin) - stored_window(limit, stored, origin);
    return {std::min(stored.value + static_cast<double>(std::max<Wide>(windows, 0)) * limit.rate, limit.capacity), at};
}

State store(const Limit &limit, const State *stored, const Level &before, double balance, Micros origin) noexcept {
    if (limit.calendar.unit == CalendarUnit::none) return store_balance(limit, stored, before, balance, origin);
    return {balance, calendar_start(limit.calendar, calendar_index(limit.calendar, before.at))};
}

// The opening of the window in which the needed number of windows have passed.
Micros guess(const Limit &limit, const State &, double shortfall, Micros at, Micros origin) noexcept {
    const double windows = std::ceil(shortfall / limit.rate);
    const Wide target = window_of(limit, at, origin) + static_cast<Wide>(std::min(windows, 1e18));
    return std::max(opening_of(limit, target, origin), at);
}

}  // namespace

const RefillRules fixed_window_rules = {level, store, guess};

}  // namespace pg_ratelimit::core
