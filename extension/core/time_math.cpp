// Instant and window arithmetic shared by the algorithms (refill.hpp): saturating, never overflowing.
#include <algorithm>
#include <cmath>
#include <limits>

#include "core/refill.hpp"

namespace pg_ratelimit::core {

Micros saturating_sub(Micros a, Micros b) noexcept {
    Micros result = 0;
    if (!__builtin_sub_overflow(a, b, &result)) return result;
    return b < 0 ? std::numeric_limits<Micros>::max() : std::numeric_limits<Micros>::min();
}

Micros saturating_add(Micros a, Micros b) noexcept {
    Micros result = 0;
    if (!__builtin_add_overflow(a, b, &result)) return result;
    return b > 0 ? std::numeric_limits<Micros>::max() : std::numeric_limits<Micros>::min();
}

Micros clamp_duration(double micros) noexcept {
    if (!(micros > 0)) return 0;  // also NaN
    if (micros >= static_cast<double>(MAX_DURATION)) return MAX_DURATION;
    return static_cast<Micros>(std::ceil(micros));
}

Wide window_index(Micros t, Micros origin, Micros period) noexcept {
    // In 64 bits whenever t - origin fits (everywhere but the ends of the timestamp range): one hardware
    // division instead of the 128-bit library call.
    Micros narrow = 0;
    if (!__builtin_sub_overflow(t, origin, &narrow)) {
        Micros index = narrow / period;
        if (narrow % period != 0 && narrow < 0) --index;
        return index;
    }
    const Wide offset = static_cast<Wide>(t) - origin;
    Wide index = offset / period;
    if (offset % period != 0 && offset < 0) --index;
    return index;
}

Micros window_start(Wide index, Micros origin, Micros period) noexcept {
    constexpr Wide MIN = std::numeric_limits<Micros>::min();
    constexpr Wide MAX = std::numeric_limits<Micros>::max();
    // |index| <= 2^64 / period, so index * period stays within 2^65: no 128-bit overflow.
    return static_cast<Micros>(std::clamp<Wide>(static_cast<Wide>(origin) + index * period, MIN, MAX));
}

}  // namespace pg_ratelimit::core
