// Random valid limits, costs and stored states for the property suites (seeded std::mt19937_64, so every
// run draws the same cases). Every algorithm gets limits it accepts: a sliding window's capacity is its
// rate, it takes no reservations and its period is at least MIN_SLIDING_PERIOD.
#pragma once

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <sstream>
#include <string>

#include "core/algorithms.hpp"
#include "core/refill.hpp"
#include "support.hpp"

namespace pg_ratelimit::core {

class Random {
  public:
    explicit Random(std::uint64_t seed) : rng_(seed) {}
    double Uniform(double lo, double hi) { return std::uniform_real_distribution<double>(lo, hi)(rng_); }
    double LogUniform(double lo, double hi) { return std::exp(Uniform(std::log(lo), std::log(hi))); }
    Micros Int(Micros lo, Micros hi) { return std::uniform_int_distribution<Micros>(lo, hi)(rng_); }
    bool Chance(double p) { return Uniform(0, 1) < p; }

  private:
    std::mt19937_64 rng_;
};

// The clock of a request stream after `now`: 15% of the time it steps back (by up to five gaps or
// periods), 30% it stays, else it moves on by up to two mean gaps.
inline Micros NextInstant(Random &random, Micros now, Micros mean_gap, Micros period) {
    if (random.Chance(0.15)) return now - random.Int(0, 5 * std::max(mean_gap, period));  // the clock steps back
    if (!random.Chance(0.3)) return now + random.Int(0, 2 * mean_gap);
    return now;
}

// A limit and the grid origin of the key under test (window_origin: 0 for algorithms without a grid).
struct Keyed {
    Limit limit;
    Micros origin = 0;
};

inline std::string Describe(const Limit &l, Micros origin) {
    std::ostringstream out;
    out.precision(17);
    out << AlgorithmName(l.algorithm) << " rate=" << l.rate << " period=" << l.period << " capacity=" << l.capacity
        << " max_reserved=" << l.max_reserved << " origin=" << origin;
    return out.str();
}

inline std::string Describe(const State &s) {
    std::ostringstream out;
    out.precision(17);
    out << "stored={" << s.value << ", " << s.ts << "}";
    return out.str();
}

// A random valid limit. Rates from 1e-3 to 1e6 per period, periods from 1 us (sliding window: 1 ms) to 30
// days, capacity from 1/30 to 30 times the rate (sliding window: the rate).
inline Keyed RandomLimit(Random &random, Algorithm algorithm, bool allow_unlimited) {
    const bool sliding = algorithm == Algorithm::sliding_window;
    Keyed s;
    Limit &l = s.limit;
    l.algorithm = algorithm;
    l.rate = random.LogUniform(1e-3, 1e6);
    if (random.Chance(0.3)) l.rate = std::round(std::max(1.0, l.rate));  // integral rates are common
    const double shortest = sliding ? static_cast<double>(MIN_SLIDING_PERIOD) : 1.0;
    l.period = static_cast<Micros>(random.LogUniform(shortest, 30.0 * kDay));
    if (sliding && random.Chance(0.1)) l.period = MIN_SLIDING_PERIOD;  // the shortest valid one
    l.capacity = std::clamp(l.rate * random.LogUniform(1.0 / 30, 30), 1e-3, 1e12);
    if (sliding || random.Chance(0.2)) l.capacity = l.rate;
    const double kind = random.Uniform(0, 1);
    if (sliding || kind < 0.4) {
        l.max_reserved = 0;
    } else if (kind < 0.8 || !allow_unlimited) {
        l.max_reserved = l.capacity * random.Uniform(0, 3);
    } else {
        l.max_reserved = kInf;
    }
    if (uses_window_grid(algorithm) && random.Chance(0.5)) {
        l.has_start = true;
        l.start = kT0 + random.Int(-10 * kYear, 10 * kYear);
    }
    s.origin = window_origin(l, static_cast<std::uint64_t>(random.Int(0, std::numeric_limits<Micros>::max())));
    return s;
}

inline double RandomCost(Random &random, const Limit &l) {
    const double kind = random.Uniform(0, 1);
    if (kind < 0.1) return l.capacity;
    if (kind < 0.4 && l.capacity >= 1) return 1;
    return l.capacity * random.LogUniform(1e-3, 1);
}

// The most a key can need to become full again from empty (no debt), bounded to keep sums far from the
// int64 limits: capacity / rate periods of continuous refill, whole windows for the fixed window, and for
// the sliding window the rest of the current window plus the next one, over which the count drains.
inline Micros FillTime(const Limit &l) {
    double periods = l.capacity / l.rate;
    if (l.algorithm == Algorithm::fixed_window) periods = std::ceil(periods);
    if (l.algorithm == Algorithm::sliding_window) periods = 2;
    return static_cast<Micros>(std::min(periods * static_cast<double>(l.period), 1e15)) + 1;
}

// The balance of a stored key at now, and the instant it is evaluated at.
inline Level LevelAt(const Keyed &s, const State &state, Micros now) {
    return rules_of(s.limit.algorithm).level(s.limit, state, now, s.origin);
}

// The stored state of a key holding `balance` (<= capacity) at `at`, in the algorithm's own encoding
// (refill.hpp: store). A sliding window key also gets a random count in its previous window, so that both
// of its counts are exercised; what the balance leaves over is counted in the current window, or, if the
// previous window alone leaves less, the previous window's count is refunded down to it.
inline State Encode(Random &random, const Keyed &s, double balance, Micros at) {
    const RefillRules &rules = rules_of(s.limit.algorithm);
    if (s.limit.algorithm != Algorithm::sliding_window) {
        return rules.store(s.limit, nullptr, Level{balance, at}, balance, s.origin);
    }
    const Wide window = window_index(at, s.origin, s.limit.period);
    const double previous = random.Chance(0.3) ? 0.0 : s.limit.capacity * random.Uniform(0, 1);
    const State before{previous, window_start(window - 1, s.origin, s.limit.period)};
    return rules.store(s.limit, &before, rules.level(s.limit, before, at, s.origin), balance, s.origin);
}

// The most a stored balance may read back below what was stored: the sliding window keeps its previous
// window's count in whole quanta of 1 / K units, rounded up (sliding_window.cpp), K = floor((period - 1) /
// capacity) quanta per unit, or (period - 1) / capacity when that is below 1. The other algorithms keep
// balances to float rounding.
inline double StoreLoss(const Limit &l) {
    if (l.algorithm != Algorithm::sliding_window) return 0;
    const double per_unit = static_cast<double>(l.period - 1) / l.capacity;
    return 1 / (per_unit >= 1 ? std::floor(per_unit) : per_unit);
}

}  // namespace pg_ratelimit::core
