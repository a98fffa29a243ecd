// Admission, reservations and refunds, shared by both algorithms (see algorithms.hpp).
#include <algorithm>
#include <cmath>
#include <limits>

#include "core/algorithms.hpp"
#include "core/refill.hpp"

namespace pg_ratelimit::core {
namespace {

// The balance of a key at now; a key without a row is full.
Level level_of(const Limit &limit, const State *stored, Micros now, Micros origin) noexcept {
    if (stored == nullptr) return {limit.capacity, now};
    return limit.algorithm == Algorithm::token_bucket ? token_bucket_level(limit, *stored, now)
                                                      : fixed_window_level(limit, *stored, now, origin);
}

// How long after now until `units` more have been added to a key evaluated at `at` (>= now).
Micros time_to_gain(const Limit &limit, double units, Micros now, Micros at, Micros origin) noexcept {
    const double tol = tolerance(limit);
    if (!(units > tol)) return 0;
    const Micros wait = limit.algorithm == Algorithm::token_bucket
                            ? token_bucket_time_to_gain(limit, units, tol)
                            : fixed_window_time_to_gain(limit, units, tol, at, origin);
    // When the clock stepped back, the key lives at `at`; the caller waits from the real now.
    return std::min(saturating_add(wait, saturating_sub(at, now)), MAX_DURATION);
}

// Whether storing next changes anything (a key without a row always needs one). A cost too small to move
// the balance at the same instant leaves the row as it is: no new row version for nothing.
bool changes(const State *stored, const State &next) noexcept {
    return stored == nullptr || stored->value != next.value || stored->ts != next.ts;
}

}  // namespace

std::uint64_t key_hash(const char *data, std::size_t size) noexcept {
    std::uint64_t hash = 14695981039346656037ULL;
    for (std::size_t i = 0; i < size; ++i) {
        hash ^= static_cast<unsigned char>(data[i]);
        hash *= 1099511628211ULL;
    }
    return hash;
}

Micros window_origin(const Limit &limit, std::uint64_t key_hash) noexcept {
    if (limit.has_start) return limit.start;
    return static_cast<Micros>(key_hash % static_cast<std::uint64_t>(limit.period));
}

double tolerance(const Limit &limit) noexcept {
    // Relative to capacity, so it means the same at every scale: some forty ulps of the largest balance,
    // far above the rounding of a few additions and far below any unit that matters.
    const double units = limit.capacity * 1e-14;
    if (limit.algorithm == Algorithm::fixed_window) return units;
    // Never more than half a microsecond of refill: admission then agrees with retry_after to the
    // microsecond (see token_bucket_time_to_gain).
    return std::min(units, 0.5 * limit.rate / static_cast<double>(limit.period));
}

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

std::int64_t whole_units(const Limit &limit, double balance) noexcept {
    const double units = std::floor(balance + tolerance(limit));
    return units > 0 ? static_cast<std::int64_t>(std::min(units, MAX_UNITS)) : 0;
}

Outcome request(const Limit &limit, const State *stored, Micros now, double cost, bool reserve,
                Micros origin) noexcept {
    const Level level = level_of(limit, stored, now, origin);
    const double after = level.value - cost;
    const double tol = tolerance(limit);
    // "Unlimited" reservations still keep the debt within MAX_UNITS, like every other figure.
    const double max_debt = std::min(limit.max_reserved, MAX_UNITS);
    Outcome out;
    if (after >= -tol || (reserve && -after <= max_debt + tol)) {
        out.allowed = true;
        out.next = {after, level.at};
        out.write = changes(stored, out.next);
        out.balance = after;
        out.retry_after = time_to_gain(limit, -after, now, level.at, origin);
    } else {
        // Denied: the request succeeds once the balance covers the cost (minus the debt a
        // reservation may take on).
        const double allowed_debt = reserve ? max_debt : 0;
        out.balance = level.value;
        out.retry_after = time_to_gain(limit, cost - allowed_debt - level.value, now, level.at, origin);
    }
    out.reset_after = time_to_gain(limit, limit.capacity - out.balance, now, level.at, origin);
    return out;
}

bool is_full(const Limit &limit, const State &stored, Micros now, Micros origin) noexcept {
    return level_of(limit, &stored, now, origin).value >= limit.capacity - tolerance(limit);
}

Outcome refund(const Limit &limit, const State *stored, Micros now, double cost, Micros origin) noexcept {
    const Level level = level_of(limit, stored, now, origin);
    Outcome out;
    out.allowed = true;
    out.balance = std::min(level.value + cost, limit.capacity);
    out.next = {out.balance, level.at};
    out.write = stored != nullptr && changes(stored, out.next);
    out.retry_after = time_to_gain(limit, -out.balance, now, level.at, origin);
    out.reset_after = time_to_gain(limit, limit.capacity - out.balance, now, level.at, origin);
    return out;
}

}  // namespace pg_ratelimit::core
