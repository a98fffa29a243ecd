// Admission, reservations and refunds, shared by every algorithm (see algorithms.hpp): they see balances
// only; what a balance is made of, and how it is stored, is each algorithm's (refill.hpp).
#include <algorithm>
#include <cmath>
#include <limits>

#include "core/algorithms.hpp"
#include "core/refill.hpp"

namespace pg_ratelimit::core {
namespace {

const RefillRules &rules_of(const Limit &limit) noexcept { return rules_of(limit.algorithm); }

// The balance of a key at now; a key without a row is full.
Level level_of(const Limit &limit, const State *stored, Micros now, Micros origin) noexcept {
    if (stored == nullptr) return {limit.capacity, now};
    return rules_of(limit).level(limit, *stored, now, origin);
}

// The one comparison every decision makes: whether a balance covers `units`, a shortfall within
// `allowance` counting as covered (the tolerance, plus the debt a reservation may take on). Admission, the
// waits and is_full all use it, so they always agree; units are subtracted first, so the balance stored
// after a reservation (balance - units) is exactly what was compared with the allowed debt.
bool covers(double balance, double units, double allowance) noexcept { return balance - units >= -allowance; }

// How long after now until the balance of `from` (nullptr: no row, full) covers `units`: the earliest
// whole microsecond at which covers() holds, found by evaluating the level itself, so that a caller who
// comes back after exactly that long is served and one microsecond earlier is not. Saturates at
// MAX_DURATION. When the clock stepped back, the key lives at its stored ts, later than now: the wait
// counts from the real now.
Micros wait_until_covered(const Limit &limit, const State *from, double units, double allowance, Micros now,
                          Micros origin) noexcept {
    const auto ok = [&](Micros t) { return covers(level_of(limit, from, t, origin).value, units, allowance); };
    const Level start = level_of(limit, from, now, origin);
    if (covers(start.value, units, allowance)) return 0;  // now (a key living ahead of now is served at once)
    const Micros last = saturating_add(now, MAX_DURATION);
    if (from == nullptr || start.at >= last || !ok(last)) return MAX_DURATION;
    // Invariant: ok(hi), !ok(lo). Start from the algorithm's guess, usually exact or one off.
    Micros lo = start.at;
    Micros hi = last;
    const Micros guess = std::clamp(
        rules_of(limit).guess(limit, *from, units - allowance - start.value, start.at, origin), start.at + 1, last);
    if (ok(guess)) {
        if (!ok(guess - 1)) return guess - now;
        hi = guess - 1;
    } else {
        lo = guess;
        if (guess < last && ok(guess + 1)) return guess + 1 - now;
    }
    while (hi - lo > 1) {
        const Micros mid = lo + (hi - lo) / 2;
        (ok(mid) ? hi : lo) = mid;
    }
    return std::min(hi - now, MAX_DURATION);
}

// How far short of a cost a request may be and still be admitted: the tolerance, plus for a reservation
// the debt it may take on ("unlimited" reservations still keep the debt within MAX_UNITS, like every
// other figure).
double allowed_shortfall(const Limit &limit, bool reserve) noexcept {
    return (reserve ? std::min(limit.max_reserved, MAX_UNITS) : 0) + tolerance(limit);
}

// Whether storing next changes anything (a key without a row always needs one). A cost too small to move
// the balance at the same instant leaves the row as it is: no new row version for nothing.
bool changes(const State *stored, const State &next) noexcept {
    return stored == nullptr || stored->value != next.value || stored->ts != next.ts;
}

}  // namespace

const RefillRules &rules_of(Algorithm algorithm) noexcept {
    switch (algorithm) {
        case Algorithm::token_bucket:
            return token_bucket_rules;
        case Algorithm::fixed_window:
            return fixed_window_rules;
        case Algorithm::gcra:
            return gcra_rules;
        case Algorithm::sliding_window:
            return sliding_window_rules;
        case Algorithm::concurrency:  // never decided here (core/leases.hpp); harmless numbers if misused
            break;
    }
    return token_bucket_rules;
}

State store_balance(const Limit &, const State *, const Level &before, double balance, Micros) noexcept {
    return {balance, before.at};
}

std::uint64_t key_hash(const char *data, std::size_t size) noexcept {
    std::uint64_t hash = 14695981039346656037ULL;
    for (std::size_t i = 0; i < size; ++i) {
        hash ^= static_cast<unsigned char>(data[i]);
        hash *= 1099511628211ULL;
    }
    return hash;
}

bool uses_window_grid(Algorithm algorithm) noexcept {
    return algorithm == Algorithm::fixed_window || algorithm == Algorithm::sliding_window;
}

Micros window_origin(const Limit &limit, std::uint64_t key_hash) noexcept {
    if (!uses_window_grid(limit.algorithm)) return 0;
    if (limit.has_start) return limit.start;
    return static_cast<Micros>(key_hash % static_cast<std::uint64_t>(limit.period));
}

Micros key_origin(const Limit &limit, const char *key, std::size_t size) noexcept {
    const bool keyed =
        uses_window_grid(limit.algorithm) && !limit.has_start && limit.calendar.unit == CalendarUnit::none;
    return window_origin(limit, keyed ? key_hash(key, size) : 0);
}

Micros jittered(const Limit &limit, Micros retry_after, std::uint64_t random) noexcept {
    if (limit.jitter <= 0) return retry_after;
    const auto spread = static_cast<Micros>(random % (static_cast<std::uint64_t>(limit.jitter) + 1));
    return std::min(saturating_add(retry_after, spread), MAX_DURATION);
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

std::int64_t whole_units(const Limit &limit, double balance) noexcept {
    const double units = std::floor(balance + tolerance(limit));
    return units > 0 ? static_cast<std::int64_t>(std::min(units, MAX_UNITS)) : 0;
}

double balance_at(const Limit &limit, const State *stored, Micros now, Micros origin) noexcept {
    return level_of(limit, stored, now, origin).value;
}

Micros time_to_full(const Limit &limit, const State *stored, Micros now, Micros origin) noexcept {
    return wait_until_covered(limit, stored, limit.capacity, tolerance(limit), now, origin);
}

Micros time_out_of_debt(const Limit &limit, const State *stored, Micros now, Micros origin) noexcept {
    return wait_until_covered(limit, stored, 0, tolerance(limit), now, origin);
}

bool admits(const Limit &limit, const State *stored, Micros now, double cost, bool reserve, Micros origin) noexcept {
    return covers(level_of(limit, stored, now, origin).value, cost, allowed_shortfall(limit, reserve));
}

Outcome request(const Limit &limit, const State *stored, Micros now, double cost, bool reserve,
                Micros origin) noexcept {
    const Level level = level_of(limit, stored, now, origin);
    const double tol = tolerance(limit);
    const double allowance = allowed_shortfall(limit, reserve);
    Outcome out;
    if (covers(level.value, cost, allowance)) {
        out.allowed = true;
        out.next = rules_of(limit).store(limit, stored, level, level.value - cost, origin);
        out.write = changes(stored, out.next);
        out.balance = level.value - cost;
        // Allowed into debt: the reserved work may run once the debt is repaid.
        // Out of debt, 0 whatever the stored encoding reads back (GCRA's TAT and the sliding window's
        // quanta may read a hair less).
        out.retry_after = out.balance >= -tol ? 0 : wait_until_covered(limit, &out.next, 0, tol, now, origin);
        out.reset_after = wait_until_covered(limit, &out.next, limit.capacity, tol, now, origin);
    } else {
        // Denied: the request succeeds once the balance covers the cost (minus the debt a reservation may
        // take on).
        out.balance = level.value;
        out.retry_after = wait_until_covered(limit, stored, cost, allowance, now, origin);
        out.reset_after = wait_until_covered(limit, stored, limit.capacity, tol, now, origin);
    }
    return out;
}

namespace {

// Whether a reservation of cost at now is admitted and due within max_wait.
bool reserved_within(const Limit &limit, const State *stored, Micros now, double cost, Micros max_wait, Micros origin,
                     Outcome *out) noexcept {
    *out = request(limit, stored, now, cost, /*reserve=*/true, origin);
    return out->allowed && out->retry_after <= max_wait;
}

}  // namespace

Outcome reserve_within(const Limit &limit, const State *stored, Micros now, double cost, Micros max_wait,
                       Micros origin) noexcept {
    Outcome out;
    if (reserved_within(limit, stored, now, cost, max_wait, origin, &out) || max_wait >= MAX_DURATION) return out;
    // Denied: the first instant t at which the balance covers the cost minus the allowed debt (a reservation
    // is admitted) and the balance at t + max_wait covers the whole cost (it is then due within max_wait).
    // Both conditions only ever become true as time passes (a balance never decreases by itself).
    const double tol = tolerance(limit);
    const Micros admitted = wait_until_covered(limit, stored, cost, allowed_shortfall(limit, true), now, origin);
    const Micros covered = wait_until_covered(limit, stored, cost, tol, now, origin);
    Micros wait = std::max(admitted, covered >= MAX_DURATION ? MAX_DURATION : covered - max_wait);
    // The reservation's own retry_after is read from the state it would store, which an encoding may round
    // by a hair: step to the first microsecond at which the reservation is really due in time.
    Outcome later;
    for (int step = 0; step < 4 && wait < MAX_DURATION &&
                       !reserved_within(limit, stored, saturating_add(now, wait), cost, max_wait, origin, &later);
         ++step)
        ++wait;
    Outcome denied;
    denied.allowed = false;
    denied.balance = level_of(limit, stored, now, origin).value;
    denied.retry_after = std::clamp<Micros>(wait, 1, MAX_DURATION);
    denied.reset_after = wait_until_covered(limit, stored, limit.capacity, tol, now, origin);
    return denied;
}

bool is_full(const Limit &limit, const State &stored, Micros now, Micros origin) noexcept {
    // A concurrency limit keeps no rows: one found (written by hand) means nothing and may go.
    if (limit.algorithm == Algorithm::concurrency) return true;
    // A row stored later than now (the clock stepped back) is kept: it holds the key's time, and without it
    // the key would refill again from now up to that instant.
    return now >= stored.ts && covers(level_of(limit, &stored, now, origin).value, limit.capacity, tolerance(limit));
}

Outcome refund(const Limit &limit, const State *stored, Micros now, double cost, Micros origin) noexcept {
    const Level level = level_of(limit, stored, now, origin);
    Outcome out;
    out.allowed = true;
    out.balance = std::min(level.value + cost, limit.capacity);
    out.next = rules_of(limit).store(limit, stored, level, out.balance, origin);
    out.write = stored != nullptr && changes(stored, out.next);
    const State *after = stored == nullptr ? nullptr : &out.next;
    const double tol = tolerance(limit);
    out.retry_after = out.balance >= -tol ? 0 : wait_until_covered(limit, after, 0, tol, now, origin);
    out.reset_after = wait_until_covered(limit, after, limit.capacity, tol, now, origin);
    return out;
}

Outcome take(const Limit &limit, const State *stored, Micros now, double cost, Micros origin) noexcept {
    const Level level = level_of(limit, stored, now, origin);
    // The deepest a balance may go: a sliding window cannot store a debt, every other algorithm a bounded one.
    const double deepest = limit.algorithm == Algorithm::sliding_window ? std::min(level.value, 0.0) : -MAX_UNITS;
    Outcome out;
    out.allowed = true;
    out.balance = std::max(level.value - cost, std::min(deepest, level.value));
    out.next = rules_of(limit).store(limit, stored, level, out.balance, origin);
    out.write = cost > 0 && changes(stored, out.next);
    // Nothing taken from a key without a row: it stays without one (full).
    const State *after = stored == nullptr && !out.write ? nullptr : &out.next;
    const double tol = tolerance(limit);
    out.retry_after = out.balance >= -tol ? 0 : wait_until_covered(limit, after, 0, tol, now, origin);
    out.reset_after = wait_until_covered(limit, after, limit.capacity, tol, now, origin);
    return out;
}

}  // namespace pg_ratelimit::core
