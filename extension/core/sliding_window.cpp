// Sliding window: the weighted two-window counter. Windows are the fixed window's grid (origin + k * period);
// at an instant a fraction f into window w, a key has used
//     current + previous * (1 - f)
// where current counts the units taken in w and previous those taken in w - 1, i.e. the previous window's
// count weighted by how much of it still overlaps the period ending now. A request is admitted while that
// stays within capacity (= rate, checked by validate.hpp). At a boundary the used amount is continuous:
// current becomes previous and drains linearly over the next window. It removes the fixed window's burst
// of twice the rate around a boundary: in any stretch of length d, at most rate + rate * d / period units
// are admitted, the bound of a token bucket whose capacity is the rate.
//
// The two stored numbers: value = current, and ts = the start of window w plus previous in quanta. So ts
// names the window (floor((ts - origin) / period) = w) and, by its offset into it, the previous window's
// count: a quantum is 1 / K units, K = floor((period - 1) / capacity) quanta per unit when that is at
// least 1 (whole units are then exact: the usual costs), else (period - 1) / capacity. validate.hpp
// requires a period of at least 1 ms, so that 999 quanta or more cover the capacity. previous is rounded up
// to a whole quantum (less the tolerance), so the rounding never admits more.
#include <algorithm>
#include <cmath>
#include <limits>

#include "core/algorithms.hpp"
#include "core/refill.hpp"

namespace pg_ratelimit::core {
namespace {

constexpr Wide MIN_INSTANT = std::numeric_limits<Micros>::min();
constexpr Wide MAX_INSTANT = MAX_TIMESTAMP;  // a ts beyond PostgreSQL's range could not be restored

// Quanta per unit of `previous` (see above).
double quanta_per_unit(const Limit &limit) noexcept {
    const double per_unit = static_cast<double>(limit.period - 1) / limit.capacity;
    return per_unit >= 1 ? std::floor(per_unit) : per_unit;
}

// What a key holds in the window containing `at` (at >= the start of the stored window).
struct Counts {
    double previous = 0;
    double current = 0;
    Wide window = 0;       // the window containing at
    Micros remaining = 0;  // microseconds from at to the end of that window, in [1, period]
};

// A count read from a row, which only edits of the table can make negative or NaN: a count below 0 is 0
// (none is ever written), a NaN the whole capacity (what the key used is unknown: count it all).
double sane_count(const Limit &limit, double count) noexcept {
    if (std::isnan(count)) return limit.capacity;
    return std::max(count, 0.0);
}

Wide start_of(Wide window, Micros origin, Micros period) noexcept {
    return static_cast<Wide>(origin) + window * period;
}

Counts counts_at(const Limit &limit, const State *stored, Micros at, Micros origin) noexcept {
    Counts counts;
    counts.window = window_index(at, origin, limit.period);
    counts.remaining = static_cast<Micros>(start_of(counts.window + 1, origin, limit.period) - at);
    if (stored == nullptr) return counts;
    const Wide stored_window = window_index(stored->ts, origin, limit.period);
    const Wide windows = counts.window - stored_window;
    if (windows == 0) {
        const Wide quanta = static_cast<Wide>(stored->ts) - start_of(stored_window, origin, limit.period);
        counts.previous = static_cast<double>(quanta) / quanta_per_unit(limit);
        counts.current = sane_count(limit, stored->value);
    } else if (windows == 1) {
        counts.previous = sane_count(limit, stored->value);
    }
    return counts;
}

double used(const Limit &limit, const Counts &counts) noexcept {
    return counts.current + counts.previous * static_cast<double>(counts.remaining) / static_cast<double>(limit.period);
}

// The instant a key is evaluated at: now, or the start of its stored window if now is earlier (the clock
// stepped back): the key then counts its previous window in full, which never admits more.
Micros evaluation_instant(const Limit &limit, const State &stored, Micros now, Micros origin) noexcept {
    const Wide start = start_of(window_index(stored.ts, origin, limit.period), origin, limit.period);
    return start > now ? static_cast<Micros>(start) : now;
}

Level level(const Limit &limit, const State &stored, Micros now, Micros origin) noexcept {
    const Micros at = evaluation_instant(limit, stored, now, origin);
    return {std::min(limit.capacity, limit.capacity - used(limit, counts_at(limit, &stored, at, origin))), at};
}

// The two numbers that hold `counts` (of the window containing `at`, on the grid of `limit` and `origin`).
State encode(const Limit &limit, Counts counts, Micros at, Micros origin) noexcept {
    const double weight = static_cast<double>(counts.remaining) / static_cast<double>(limit.period);
    // previous in whole quanta, rounded up; what cannot be written that way (more than the capacity, which
    // only edits of the table can cause, or an instant beyond int64 at the ends of time) is counted in the
    // current window instead: it then weighs in full until the window ends, never less.
    const double per_unit = quanta_per_unit(limit);
    const double most = static_cast<double>(limit.period - 1);
    double quanta = std::ceil(std::max(0.0, counts.previous - tolerance(limit)) * per_unit);
    if (quanta > most) {
        counts.current += (counts.previous - most / per_unit) * weight;
        quanta = most;
    }
    const Wide start = start_of(counts.window, origin, limit.period);
    const Wide ts = start + static_cast<Wide>(quanta);
    if (ts >= MIN_INSTANT && ts <= MAX_INSTANT) return {counts.current, static_cast<Micros>(ts)};
    // The quanta would end beyond PostgreSQL's last instant: the window's start (<= at) holds none, and the
    // current count takes the part of previous they would have held. (Before the first int64 instant, only
    // at is known to be representable: its offset then reads as a previous count too, which only weighs
    // more.)
    const double current = counts.current + quanta / per_unit * weight;
    return {current, ts > MAX_INSTANT ? static_cast<Micros>(start) : at};
}

State store(const Limit &limit, const State *stored, const Level &before, double balance, Micros origin) noexcept {
    Counts counts = counts_at(limit, stored, before.at, origin);
    const double period = static_cast<double>(limit.period);
    const double weight = static_cast<double>(counts.remaining) / period;
    const double weighted = counts.previous * weight;
    const double target = limit.capacity - balance;
    const double now_used = counts.current + weighted;
    if (target >= now_used) {
        counts.current += target - now_used;  // consumption counts in the current window
    } else {
        // A refund gives back the current window's units first, then the previous window's weighted ones.
        const double refund = now_used - target;
        if (refund <= counts.current) {
            counts.current -= refund;
        } else {
            const double rest = refund - counts.current;
            counts.current = 0;
            counts.previous = weighted > 0 ? counts.previous * std::max(0.0, (weighted - rest) / weighted) : 0;
        }
    }
    return encode(limit, counts, before.at, origin);
}

// When the key's use has dropped by shortfall: the previous window's weighted count drains linearly until
// the end of the window containing at, then the current window's count drains over the next window.
Micros guess(const Limit &limit, const State &stored, double shortfall, Micros at, Micros origin) noexcept {
    const Counts counts = counts_at(limit, &stored, at, origin);
    const double period = static_cast<double>(limit.period);
    const double draining = counts.previous * static_cast<double>(counts.remaining) / period;
    if (counts.previous > 0 && shortfall <= draining)
        return saturating_add(at, clamp_duration(shortfall * period / counts.previous));
    const auto end = static_cast<Micros>(std::min(start_of(counts.window + 1, origin, limit.period), MAX_INSTANT));
    const double rest = shortfall - draining;
    const double after = counts.current > 0 && rest <= counts.current ? rest * period / counts.current : period;
    return saturating_add(end, clamp_duration(after));
}

}  // namespace

const RefillRules sliding_window_rules = {level, store, guess};

State sliding_window_scaled(const Limit &from, const Limit &to, const State &stored, Micros now, Micros from_origin,
                            Micros to_origin, double factor) noexcept {
    const Micros at = evaluation_instant(from, stored, now, from_origin);
    Counts counts = counts_at(from, &stored, at, from_origin);
    if (from.period == to.period && from_origin == to_origin) {
        counts.previous *= factor;
        counts.current *= factor;
        return encode(to, counts, at, to_origin);
    }
    Counts folded = counts_at(to, nullptr, at, to_origin);
    folded.current = used(from, counts) * factor;
    return encode(to, folded, at, to_origin);
}

}  // namespace pg_ratelimit::core
