// Fixed window: rate units arrive at each window boundary origin + k * period, capped at capacity.
#include <algorithm>
#include <cmath>

#include "core/refill.hpp"

namespace pg_ratelimit::core {
namespace {

// 128-bit: t - origin and the window arithmetic below can exceed int64 at the ends of PostgreSQL's
// timestamp range.
using Wide = __int128;

// floor((t - origin) / period) for any sign of t - origin.
Wide window_index(Micros t, Micros origin, Micros period) noexcept {
    const Wide offset = static_cast<Wide>(t) - origin;
    Wide index = offset / period;
    if (offset % period != 0 && offset < 0) --index;
    return index;
}

}  // namespace

Level fixed_window_level(const Limit &limit, const State &stored, Micros now, Micros origin) noexcept {
    const Micros at = std::max(now, stored.ts);
    const Wide windows = window_index(at, origin, limit.period) - window_index(stored.ts, origin, limit.period);
    return {std::min(stored.value + static_cast<double>(windows) * limit.rate, limit.capacity), at};
}

Micros fixed_window_time_to_gain(const Limit &limit, double units, double tolerance, Micros at,
                                 Micros origin) noexcept {
    const double windows = std::ceil((units - tolerance) / limit.rate);
    const Wide window_start = origin + window_index(at, origin, limit.period) * limit.period;
    return clamp_duration(static_cast<double>(window_start - at) + windows * static_cast<double>(limit.period));
}

}  // namespace pg_ratelimit::core
