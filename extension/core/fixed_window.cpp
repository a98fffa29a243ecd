// Fixed window: rate units arrive at each window boundary origin + k * period, capped at capacity.
#include <algorithm>
#include <cmath>
#include <limits>

#include "core/refill.hpp"

namespace pg_ratelimit::core {
namespace {

Level level(const Limit &limit, const State &stored, Micros now, Micros origin) noexcept {
    const Micros at = std::max(now, stored.ts);
    const Wide windows = window_index(at, origin, limit.period) - window_index(stored.ts, origin, limit.period);
    return {std::min(stored.value + static_cast<double>(windows) * limit.rate, limit.capacity), at};
}

// The boundary that the needed number of windows ends at, computed in 128 bits.
Micros guess(const Limit &limit, const State &, double shortfall, Micros at, Micros origin) noexcept {
    const double windows = std::ceil(shortfall / limit.rate);
    const Wide boundary = static_cast<Wide>(origin) + window_index(at, origin, limit.period) * limit.period +
                          static_cast<Wide>(std::min(windows, 1e18)) * limit.period;
    constexpr Wide MAX = std::numeric_limits<Micros>::max();
    return static_cast<Micros>(std::clamp<Wide>(boundary, at, MAX));
}

}  // namespace

const RefillRules fixed_window_rules = {level, store_balance, guess};

}  // namespace pg_ratelimit::core
