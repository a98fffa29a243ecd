// GCRA, the generic cell rate algorithm (as in redis-cell): a key's state is one instant, its theoretical
// arrival time (TAT), the instant at which it would be full again if nothing else happened. Each unit
// costs an emission interval T = period / rate, so a key holds capacity - (TAT - now) / T units: exactly
// the balance of a token bucket of the same rate and capacity, which is what makes the two convertible.
//
// Stored: ts = floor(TAT) and value = the fraction of a microsecond beyond it, in [0, 1), so that a
// balance written and read back is the token bucket's to rounding (within core::tolerance). A TAT beyond
// PostgreSQL's last timestamp (a very slow limit deep in debt) keeps ts at that last timestamp and the rest
// of the time owed in value: never clamped, so never read back as less owed.
//
// Where GCRA and the token bucket differ: a clock stepped back makes a GCRA key poorer (its TAT is
// further away from the earlier now) where a token bucket key holds still at its last instant. Neither
// mints units.
#include <algorithm>
#include <cmath>
#include <limits>

#include "core/refill.hpp"

namespace pg_ratelimit::core {
namespace {

Level level(const Limit &limit, const State &stored, Micros now, Micros) noexcept {
    const double owed = static_cast<double>(saturating_sub(stored.ts, now)) + stored.value;
    if (!(owed > 0)) return {limit.capacity, now};
    return {std::min(limit.capacity, limit.capacity - owed * limit.rate / static_cast<double>(limit.period)), now};
}

State store(const Limit &limit, const State *, const Level &before, double balance, Micros) noexcept {
    const double owed = (limit.capacity - balance) * static_cast<double>(limit.period) / limit.rate;
    if (!(owed > 0)) return {0, before.at};
    // Whole microseconds in ts as far as PostgreSQL's timestamps reach, the rest (a fraction of one, unless
    // the TAT lies beyond them) in value. The whole part is a multiple of owed's float spacing (when that
    // exceeds 1 us), so that value = owed - whole is exact and the two read back to owed exactly.
    const Micros room = std::max<Micros>(0, saturating_sub(MAX_TIMESTAMP, before.at));
    Micros whole = std::min(static_cast<Micros>(std::min(std::floor(owed), 9.0e18)), room);
    const int exponent = std::ilogb(owed) - (std::numeric_limits<double>::digits - 1);
    if (exponent >= std::numeric_limits<Micros>::digits) {
        whole = 0;  // a spacing beyond every int64: all of it in value
    } else if (exponent > 0) {
        whole &= ~((Micros{1} << exponent) - 1);
    }
    return {owed - static_cast<double>(whole), before.at + whole};
}

Micros guess(const Limit &limit, const State &, double shortfall, Micros at, Micros) noexcept {
    return saturating_add(at, clamp_duration(shortfall * static_cast<double>(limit.period) / limit.rate));
}

}  // namespace

const RefillRules gcra_rules = {level, store, guess};

}  // namespace pg_ratelimit::core
