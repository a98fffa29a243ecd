// The algorithms the core fuzzer drives, each with the admission bound it documents. Adding an algorithm
// to core::Algorithm is one line in kAlgorithms (plus its refill bound): the decoder picks from this list
// and every invariant reads the bound from here.
#pragma once

#include <cstddef>

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

// Fixed window: rate units at each boundary origin + k * period crossed in (from, to].
inline long double fixed_window_refill(const Limit &limit, Micros origin, Micros from, Micros to) {
    const __int128 crossed = floor_div(static_cast<__int128>(to) - origin, limit.period) -
                             floor_div(static_cast<__int128>(from) - origin, limit.period);
    return static_cast<long double>(limit.rate) * static_cast<long double>(crossed);
}

struct AlgorithmUnderTest {
    Algorithm algorithm;
    const char *name;
    bool accepts_start;  // validate_limit accepts `start` (a window grid anchor) for this algorithm
    // The most units the algorithm adds to a key between the key instants from <= to: units admitted in
    // [from, to] (net of refunds) never exceed capacity + debt left at `to` + this.
    long double (*refill_bound)(const Limit &limit, Micros origin, Micros from, Micros to);
};

inline constexpr AlgorithmUnderTest kAlgorithms[] = {
    {Algorithm::token_bucket, "token_bucket", false, token_bucket_refill},
    {Algorithm::fixed_window, "fixed_window", true, fixed_window_refill},
};
inline constexpr std::size_t kAlgorithmCount = sizeof(kAlgorithms) / sizeof(kAlgorithms[0]);

inline const AlgorithmUnderTest &algorithm_under_test(Algorithm algorithm) {
    for (const AlgorithmUnderTest &candidate : kAlgorithms) {
        if (candidate.algorithm == algorithm) return candidate;
    }
    __builtin_trap();  // every value of core::Algorithm must be listed above
}

}  // namespace pg_ratelimit::fuzz
