#include "core/rescale.hpp"

#include <algorithm>

#include "core/algorithms.hpp"
#include "core/refill.hpp"

namespace pg_ratelimit::core {
namespace {

bool converts(Algorithm a, Algorithm b) noexcept {
    const auto balance_kept = [](Algorithm x) { return x == Algorithm::token_bucket || x == Algorithm::gcra; };
    return a == b || (balance_kept(a) && balance_kept(b));
}

}  // namespace

bool state_carries_over(const Limit &from, const Limit &to) noexcept {
    return from.shards == to.shards && converts(from.algorithm, to.algorithm);
}

bool rescale_rewrites(const Limit &from, const Limit &to) noexcept {
    if (to.algorithm == Algorithm::concurrency) return false;  // leases live in the lock manager, not in rows
    if (from.algorithm != to.algorithm) return true;
    // A redefinition takes effect at its instant: each key is first brought to that instant under the old
    // numbers, then carried over. Stored numbers left as they are would be read under the new ones from
    // the key's last call on: a token bucket's or fixed window's refill since then counted at the new rate,
    // and up to the new capacity instead of the old; GCRA's time owed (worth rate / period units a
    // microsecond) read as another balance; a sliding window's counts, kept in quanta of its capacity,
    // read as other counts. So another rate, period or capacity always rewrites the keys, even as_is.
    if (from.rate != to.rate || from.period != to.period || from.capacity != to.capacity) return true;
    // A key of a window algorithm is read on its window grid (a calendar key keeps its window's opening): on
    // another grid it is written again at the redefinition's instant, or the new grid could count a window
    // opening between the key's last call and now that the key never saw.
    if (uses_window_grid(to.algorithm) &&
        (from.has_start != to.has_start || (to.has_start && from.start != to.start) ||
         from.calendar.unit != to.calendar.unit || from.calendar.count != to.calendar.count ||
         from.calendar.zone != to.calendar.zone))
        return true;
    // What is left (max_reserved, jitter, shadow) does not change what the stored numbers mean, and with the
    // same capacity the proportional factor is 1: the rule does not matter.
    return false;
}

State rescaled_state(const Limit &from, const Limit &to, const State &stored, Micros now, Micros from_origin,
                     Micros to_origin, Rescale rule) noexcept {
    const double factor = rule == Rescale::proportional ? to.capacity / from.capacity : 1.0;
    if (from.algorithm == Algorithm::sliding_window)
        return sliding_window_scaled(from, to, stored, now, from_origin, to_origin, factor);
    // The balance the key holds now, as the same share of the new capacity (never above it), written back
    // the way the new algorithm keeps it.
    const Level level = rules_of(from.algorithm).level(from, stored, now, from_origin);
    const double balance = std::min(level.value * factor, to.capacity);
    return rules_of(to.algorithm).store(to, nullptr, Level{balance, level.at}, balance, to_origin);
}

}  // namespace pg_ratelimit::core
