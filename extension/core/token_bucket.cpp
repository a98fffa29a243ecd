// Token bucket: continuous refill at rate / period, capped at capacity.
#include <algorithm>

#include "core/refill.hpp"

namespace pg_ratelimit::core {

Level token_bucket_level(const Limit &limit, const State &stored, Micros now) noexcept {
    const Micros at = std::max(now, stored.ts);
    // Multiply before dividing: integral elapsed * rate stays exact far longer than rate / period.
    const double gained =
        static_cast<double>(saturating_sub(at, stored.ts)) * limit.rate / static_cast<double>(limit.period);
    return {std::min(stored.value + gained, limit.capacity), at};
}

Micros token_bucket_time_to_gain(const Limit &limit, double units, double tolerance) noexcept {
    const double micros = units * static_cast<double>(limit.period) / limit.rate;
    // The earliest whole microsecond at which the shortfall is within half the tolerance, so the request
    // is admitted there even after the float rounding of evaluating the refill. The token bucket's
    // tolerance is under half a microsecond of refill, so an exact wait stays exact (01:00:00, not
    // 00:59:59.999999) and one microsecond earlier is still denied.
    return clamp_duration(micros - 0.5 * tolerance * static_cast<double>(limit.period) / limit.rate);
}

}  // namespace pg_ratelimit::core
