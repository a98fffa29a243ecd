#include "core/rescale.hpp"

#include <algorithm>

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

bool rescale_rewrites(const Limit &from, const Limit &to, Rescale rule) noexcept {
    if (to.algorithm == Algorithm::concurrency) return false;  // leases live in the lock manager, not in rows
    if (from.algorithm != to.algorithm) return true;
    // A sliding window writes its previous count in quanta of its capacity on its window grid: another
    // capacity, period or grid reads the same numbers as other counts, so they are written again even as_is.
    // GCRA keeps a time owed, worth rate / period units a microsecond: another rate or period (or capacity)
    // reads it as another balance, so it is written again, the balance kept (as_is) or scaled.
    if (to.algorithm == Algorithm::gcra &&
        (from.rate != to.rate || from.period != to.period || from.capacity != to.capacity))
        return true;
    if (to.algorithm == Algorithm::sliding_window &&
        (from.capacity != to.capacity || from.period != to.period || from.has_start != to.has_start ||
         (to.has_start && from.start != to.start)))
        return true;
    // A fixed window's key is read on its window grid (a calendar key keeps its window's opening): on another
    // grid it is written again at the redefinition's instant, or the new grid could count a window opening
    // between the key's last call and now that the key never saw.
    if (to.algorithm == Algorithm::fixed_window &&
        (from.period != to.period || from.has_start != to.has_start || (to.has_start && from.start != to.start) ||
         from.calendar.unit != to.calendar.unit || from.calendar.count != to.calendar.count ||
         from.calendar.zone != to.calendar.zone))
        return true;
    return rule == Rescale::proportional && from.capacity != to.capacity;
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
