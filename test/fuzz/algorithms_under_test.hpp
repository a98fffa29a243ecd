// The algorithms the core fuzzer drives, each with the admission bound it documents. Adding an algorithm
// to core::Algorithm is one line in kAlgorithms (plus its refill bound, its own validation constraints and
// how its stored state reads back): the decoder picks from this list and every invariant reads from here.
#pragma once

#include <cmath>
#include <cstddef>

#include "core/calendar.hpp"
#include "core/limit.hpp"

namespace pg_ratelimit::fuzz {

using core::Algorithm;
using core::Limit;
using core::Micros;

// floor(a / b) for b > 0 and any sign of a, without overflow (instants span the whole int64 range).
inline __int128 floor_div(__int128 a, __int128 b) {
    const __int128 quotient = a / b;
    return (a % b != 0 && a < 0) ? quotient - 1 : quotient;
}

// Token bucket: units arrive continuously, rate per period.
inline long double token_bucket_refill(const Limit &limit, Micros /*origin*/, Micros from, Micros to) {
    const auto span = static_cast<long double>(static_cast<__int128>(to) - from);
    return static_cast<long double>(limit.rate) * span / static_cast<long double>(limit.period);
}

// Fixed window: rate units at each boundary origin + k * period crossed in (from, to]; on a calendar, at each
// of its openings (core/calendar.hpp: window k opens at calendar_start(k), and an instant t is in window
// calendar_index(t); the harness checks the two agree).
inline long double fixed_window_refill(const Limit &limit, Micros origin, Micros from, Micros to) {
    if (limit.calendar.unit != core::CalendarUnit::none) {
        const __int128 opened = core::calendar_index(limit.calendar, to) - core::calendar_index(limit.calendar, from);
        return static_cast<long double>(limit.rate) * static_cast<long double>(opened);
    }
    const __int128 crossed = floor_div(static_cast<__int128>(to) - origin, limit.period) -
                             floor_div(static_cast<__int128>(from) - origin, limit.period);
    return static_cast<long double>(limit.rate) * static_cast<long double>(crossed);
}

// Sliding window: its capacity is its rate, and it admits at most rate + rate * d / period in any stretch of
// length d (sliding_window.cpp): the token bucket's bound.
inline long double sliding_window_refill(const Limit &limit, Micros origin, Micros from, Micros to) {
    return token_bucket_refill(limit, origin, from, to);
}

// Sliding window: its previous window's count is stored in whole quanta of 1 / K units, rounded up
// (sliding_window.cpp), K = floor((period - 1) / capacity) quanta per unit, or (period - 1) / capacity when
// that is below 1. A written balance reads back at most one quantum less.
inline double sliding_window_quantum(const Limit &limit) {
    const double per_unit = static_cast<double>(limit.period - 1) / limit.capacity;
    return 1 / (per_unit >= 1 ? std::floor(per_unit) : per_unit);
}

inline double no_loss(const Limit & /*limit*/) { return 0; }

// Ordered by alignment (clang-analyzer's padding check).
struct AlgorithmUnderTest {
    const char *name;
    // The most units the algorithm adds to a key between the key instants from <= to: units admitted in
    // [from, to] (net of refunds) never exceed capacity - the balance left at `to` + this.
    long double (*refill_bound)(const Limit &limit, Micros origin, Micros from, Micros to);
    // How a balance written by a call reads back (core::balance_at on the stored state, at the same
    // instant): with stores_balance the state is {balance, key instant} itself; otherwise an encoding that
    // reads back to float rounding, and up to store_loss units less (never more).
    double (*store_loss)(const Limit &limit);
    // What validate_limit requires of this algorithm alone (the sliding window's LimitProblem::sliding_*):
    // a period of at least min_period, capacity equal to the rate, no reservations.
    Micros min_period;
    Algorithm algorithm;
    bool accepts_start;  // validate_limit accepts `start` (a window grid anchor) for this algorithm
    bool capacity_is_rate;
    bool no_reservations;
    bool stores_balance;
    bool accepts_calendar;  // validate_limit accepts a calendar (days, weeks or months in a time zone)
    // Whether a row keeps the key's time even when full: the core never evaluates such a key earlier than
    // the latest instant it was written at (the token bucket, at its ts; the windows, in their stored
    // window). GCRA's row is one instant, its TAT: a refund that makes a key full while the clock is behind
    // the key's time writes a TAT of now, and later calls at that earlier clock count from there (gcra.cpp).
    bool full_row_holds_key_time;
};

// Columns: name, refill_bound, store_loss, min_period, algorithm, accepts_start, capacity_is_rate,
// no_reservations, stores_balance, accepts_calendar, full_row_holds_key_time.
inline constexpr AlgorithmUnderTest kAlgorithms[] = {
    {"token_bucket", token_bucket_refill, no_loss, 1, Algorithm::token_bucket, false, false, false, true, false, true},
    {"fixed_window", fixed_window_refill, no_loss, 1, Algorithm::fixed_window, true, false, false, true, true, true},
    // GCRA decides as a token bucket (its balances, stored as the theoretical arrival time).
    {"gcra", token_bucket_refill, no_loss, 1, Algorithm::gcra, false, false, false, false, false, false},
    {"sliding_window", sliding_window_refill, sliding_window_quantum, core::MIN_SLIDING_PERIOD,
     Algorithm::sliding_window, true, true, true, false, false, true},
};
inline constexpr std::size_t kAlgorithmCount = sizeof(kAlgorithms) / sizeof(kAlgorithms[0]);

inline const AlgorithmUnderTest &algorithm_under_test(Algorithm algorithm) {
    for (const AlgorithmUnderTest &candidate : kAlgorithms) {
        if (candidate.algorithm == algorithm) return candidate;
    }
    __builtin_trap();  // every value of core::Algorithm must be listed above
}

}  // namespace pg_ratelimit::fuzz
