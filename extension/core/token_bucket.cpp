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

Micros token_bucket_time_to_gain(const Limit &limit, double units, double tolerance) noexcept {
    const double micros = units * static_cast<double>(limit.period) / limit.rate;
    // Round up to whole microseconds, forgiving at most the fraction of a microsecond whose refill is
    // below the tolerance: exact waits stay exact (01:00:00, not 00:59:59.999999) and the request still
    // succeeds at now + wait.
    const double slack = std::min(0.001, tolerance * static_cast<double>(limit.period) / limit.rate);
    return clamp_duration(micros - slack);
}

}  // namespace pg_ratelimit::core
