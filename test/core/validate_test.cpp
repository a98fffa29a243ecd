// validate_limit() and validate_cost(): every bound of validate.hpp, on both sides.
#include "core/validate.hpp"

#include <gtest/gtest.h>

#include "support.hpp"

#include <cmath>
#include <limits>

namespace pg_ratelimit::core {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

Limit Valid(Algorithm algorithm = Algorithm::token_bucket) {
    Limit limit;
    limit.algorithm = algorithm;
    limit.rate = 10;
    limit.period = 10 * kSec;
    limit.capacity = 10;
    limit.max_reserved = 0;
    return limit;
}

// The bounds: periods up to 100 years, durations up to 1000 periods of that, starts within about
// 10,000 years of 2000-01-01. MAX_UNITS was 1e15 in the header this suite was written against and is
// 1e12 since commit 6d6b6b0 (README: "Units are limited to 10^12"); the tests below use the constant.
// Whatever its value, whole units up to it must be exact in a double, with room for fractions.
TEST(Bounds, Values) {
    EXPECT_LE(MAX_UNITS, 1e15);
    EXPECT_LT(MAX_UNITS * 1024, 9007199254740992.0);  // 2^53: a tenth of a unit is still resolved at MAX_UNITS
    EXPECT_EQ(MAX_PERIOD, Micros{100} * 366 * 86400 * 1000000);
    EXPECT_EQ(MAX_DURATION, MAX_PERIOD * 1000);
    EXPECT_EQ(MAX_START_OFFSET, Micros{10000} * 366 * 86400 * 1000000);
}

TEST(ValidateLimit, DefaultsAreInvalid) { EXPECT_EQ(validate_limit(Limit{}), LimitProblem::rate); }

TEST(ValidateLimit, AcceptsAValidLimit) {
    // Valid() has capacity = rate and no reservations: valid for every algorithm, the sliding window too.
    for (const Algorithm algorithm : kAllAlgorithms) {
        EXPECT_EQ(validate_limit(Valid(algorithm)), LimitProblem::none) << AlgorithmName(algorithm);
    }
}

TEST(ValidateLimit, Rate) {
    for (const double rate : {0.0, -0.0, -1.0, kNaN, kInf, -kInf, std::nextafter(MAX_UNITS, kInf), 2 * MAX_UNITS}) {
        Limit limit = Valid();
        limit.rate = rate;
        EXPECT_EQ(validate_limit(limit), LimitProblem::rate) << rate;
    }
    for (const double rate : {MIN_UNITS, 0.001, 1.0, MAX_UNITS / 2, MAX_UNITS}) {
        Limit limit = Valid();
        limit.rate = rate;
        EXPECT_EQ(validate_limit(limit), LimitProblem::none) << rate;
    }
}

TEST(ValidateLimit, Period) {
    for (const Micros period : {Micros{0}, Micros{-1}, -MAX_PERIOD, std::numeric_limits<Micros>::min()}) {
        Limit limit = Valid();
        limit.period = period;
        EXPECT_EQ(validate_limit(limit), LimitProblem::period) << period;
    }
    // Too long is its own problem, so that the message can say so (not "must be positive").
    for (const Micros period : {MAX_PERIOD + 1, std::numeric_limits<Micros>::max()}) {
        Limit limit = Valid();
        limit.period = period;
        EXPECT_EQ(validate_limit(limit), LimitProblem::period_too_long) << period;
    }
    for (const Micros period : {Micros{1}, kSec, MAX_PERIOD}) {
        Limit limit = Valid();
        limit.period = period;
        EXPECT_EQ(validate_limit(limit), LimitProblem::none) << period;
    }
}

TEST(ValidateLimit, Capacity) {
    for (const double capacity : {0.0, -1.0, kNaN, kInf, std::nextafter(MAX_UNITS, kInf)}) {
        Limit limit = Valid();
        limit.capacity = capacity;
        EXPECT_EQ(validate_limit(limit), LimitProblem::capacity) << capacity;
    }
    for (const double capacity : {1e-9, 0.5, 3.0, MAX_UNITS}) {
        Limit limit = Valid();
        limit.capacity = capacity;
        EXPECT_EQ(validate_limit(limit), LimitProblem::none) << capacity;
    }
}

TEST(ValidateLimit, CapacityMayBeBelowOrAboveRate) {
    Limit below = Valid();
    below.rate = 60;
    below.capacity = 10;
    EXPECT_EQ(validate_limit(below), LimitProblem::none);
    Limit above = Valid();
    above.rate = 1;
    above.capacity = 1000;
    EXPECT_EQ(validate_limit(above), LimitProblem::none);
}

TEST(ValidateLimit, MaxReserved) {
    for (const double max_reserved : {kNaN, -kNaN, -1.0, -1e-300, -kInf}) {
        Limit limit = Valid();
        limit.max_reserved = max_reserved;
        EXPECT_EQ(validate_limit(limit), LimitProblem::max_reserved) << max_reserved;
    }
    for (const double max_reserved : {0.0, -0.0, 1.0, MAX_UNITS, kInf}) {
        Limit limit = Valid();
        limit.max_reserved = max_reserved;
        EXPECT_EQ(validate_limit(limit), LimitProblem::none) << max_reserved;
    }
}

// start anchors a window grid: the fixed and sliding windows have one, the token bucket and GCRA do not.
TEST(ValidateLimit, StartNeedsAWindowGrid) {
    for (const Algorithm algorithm : kAllAlgorithms) {
        Limit limit = Valid(algorithm);
        limit.has_start = true;
        limit.start = 0;
        EXPECT_EQ(validate_limit(limit),
                  uses_window_grid(algorithm) ? LimitProblem::none : LimitProblem::start_needs_window)
            << AlgorithmName(algorithm);
    }
    EXPECT_TRUE(uses_window_grid(Algorithm::fixed_window));
    EXPECT_TRUE(uses_window_grid(Algorithm::sliding_window));
    EXPECT_FALSE(uses_window_grid(Algorithm::token_bucket));
    EXPECT_FALSE(uses_window_grid(Algorithm::gcra));
    // A start value without has_start is ignored.
    Limit ignored = Valid(Algorithm::token_bucket);
    ignored.start = 123;
    EXPECT_EQ(validate_limit(ignored), LimitProblem::none);
}

TEST(ValidateLimit, StartRange) {
    for (const Algorithm algorithm : {Algorithm::fixed_window, Algorithm::sliding_window}) {
        for (const Micros start :
             {Micros{0}, Micros{-1}, MAX_START_OFFSET, -MAX_START_OFFSET, Micros{770'000'000} * kSec}) {
            Limit limit = Valid(algorithm);
            limit.has_start = true;
            limit.start = start;
            EXPECT_EQ(validate_limit(limit), LimitProblem::none) << start;
        }
        for (const Micros start : {MAX_START_OFFSET + 1, -MAX_START_OFFSET - 1, std::numeric_limits<Micros>::max(),
                                   std::numeric_limits<Micros>::min()}) {
            Limit limit = Valid(algorithm);
            limit.has_start = true;
            limit.start = start;
            EXPECT_EQ(validate_limit(limit), LimitProblem::start_out_of_range) << start;
        }
    }
}

// The sliding window's own constraints (sliding_window_test.cpp covers them in detail): the other
// algorithms accept what it refuses.
TEST(ValidateLimit, SlidingWindowConstraintsAreItsOwn) {
    for (const Algorithm algorithm : kAllAlgorithms) {
        const bool sliding = algorithm == Algorithm::sliding_window;
        Limit capacity = Valid(algorithm);
        capacity.capacity = 20;
        EXPECT_EQ(validate_limit(capacity), sliding ? LimitProblem::sliding_capacity : LimitProblem::none);
        Limit reservations = Valid(algorithm);
        reservations.max_reserved = 5;
        EXPECT_EQ(validate_limit(reservations), sliding ? LimitProblem::sliding_reservations : LimitProblem::none);
        Limit period = Valid(algorithm);
        period.period = MIN_SLIDING_PERIOD - 1;
        EXPECT_EQ(validate_limit(period), sliding ? LimitProblem::sliding_period : LimitProblem::none);
    }
}

TEST(ValidateLimit, Jitter) {
    for (const Algorithm algorithm : kAllAlgorithms) {
        Limit limit = Valid(algorithm);
        limit.jitter = MAX_JITTER;
        EXPECT_EQ(validate_limit(limit), LimitProblem::none);
        limit.jitter = -1;
        EXPECT_EQ(validate_limit(limit), LimitProblem::jitter);
        limit.jitter = MAX_JITTER + 1;
        EXPECT_EQ(validate_limit(limit), LimitProblem::jitter);
    }
}

TEST(ValidateCost, Valid) {
    const Limit limit = Valid();
    for (const double cost : {1e-9, 0.1, 1.0, 9.999, 10.0}) {
        EXPECT_EQ(validate_cost(limit, cost), CostProblem::none) << cost;
    }
}

TEST(ValidateCost, NotPositiveFinite) {
    Limit limit = Valid();
    limit.capacity = MAX_UNITS;
    for (const double cost : {0.0, -0.0, -1.0, kNaN, kInf, -kInf, std::nextafter(MAX_UNITS, kInf), 1e300}) {
        EXPECT_EQ(validate_cost(limit, cost), CostProblem::not_positive_finite) << cost;
    }
    EXPECT_EQ(validate_cost(limit, MAX_UNITS), CostProblem::none);
}

TEST(ValidateCost, ExceedsCapacity) {
    const Limit limit = Valid();  // capacity 10
    for (const double cost : {10.001, 11.0, 1e6, MAX_UNITS}) {
        EXPECT_EQ(validate_cost(limit, cost), CostProblem::exceeds_capacity) << cost;
    }
    // Even with unlimited reservations a cost above capacity can never succeed.
    Limit reserving = Valid();
    reserving.max_reserved = kInf;
    EXPECT_EQ(validate_cost(reserving, 11), CostProblem::exceeds_capacity);
}

TEST(ValidateCost, FractionalCapacity) {
    Limit limit = Valid();
    limit.capacity = 0.5;
    EXPECT_EQ(validate_cost(limit, 0.5), CostProblem::none);
    EXPECT_EQ(validate_cost(limit, 0.25), CostProblem::none);
    EXPECT_EQ(validate_cost(limit, 0.6), CostProblem::exceeds_capacity);
    EXPECT_EQ(validate_cost(limit, 1.0), CostProblem::exceeds_capacity);
}

}  // namespace
}  // namespace pg_ratelimit::core
