// Token bucket: continuous refill at rate / period, capped at capacity.
#include <algorithm>

#include "core/refill.hpp"

namespace pg_ratelimit::core {
namespace {

Level level(const Limit &limit, const State &stored, Micros now, Micros) noexcept {
    const Micros at = std::max(now, stored.ts);
    // Multiply before dividing: integral elapsed * rate stays exact far longer than rate / period. Both
    // steps round monotonically, so the balance never decreases as time goes on.
    const double gained =
        static_cast<double>(saturating_sub(at, stored.ts)) * limit.rate / static_cast<double>(limit.period);
    return {std::min(stored.value + gained, limit.capacity), at};
}

Micros guess(const Limit &limit, const State &, double shortfall, Micros at, Micros) noexcept {
    return saturating_add(at, clamp_duration(shortfall * static_cast<double>(limit.period) / limit.rate));
}

}  // namespace

const RefillRules token_bucket_rules = {level, store_balance, guess};

}  // namespace pg_ratelimit::core
