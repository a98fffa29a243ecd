// Token bucket: continuous refill at rate / period, capped at capacity.
#include <algorithm>

#include "core/refill.hpp"

namespace pg_ratelimit::core {

Level token_bucket_level(const Limit &limit, const State &stored, Micros now) noexcept {
    const Micros at = std::max(now, stored.ts);
    // Multiply before dividing: integral elapsed * rate stays exact far longer than rate / period.
    const double gained = static_cast<double>(at - stored.ts) * limit.rate / static_cast<double>(limit.period);
    return {std::min(stored.value + gained, limit.capacity), at};
}

Micros token_bucket_time_to_gain(const Limit &limit, double units) noexcept {
    if (!(units > 0)) return 0;
    return clamp_duration(units * static_cast<double>(limit.period) / limit.rate);
}

}  // namespace pg_ratelimit::core
