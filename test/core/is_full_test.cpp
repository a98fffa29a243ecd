// is_full(): a stored key that has refilled to capacity is equivalent to no row (rate_limit_cleanup
// deletes such rows), so a request on it must decide like a request on a key without a row.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "core/algorithms.hpp"
#include "support.hpp"

namespace pg_ratelimit::core {
namespace {

TEST(IsFull, TokenBucketAfterTheRefillTime) {
    const Limit limit = Make(Algorithm::token_bucket, 10, 10 * kSec, 10);
    const State empty{0, kT0};
    EXPECT_FALSE(is_full(limit, empty, kT0, 0));
    EXPECT_FALSE(is_full(limit, empty, kT0 + 10 * kSec - 1, 0));
    EXPECT_TRUE(is_full(limit, empty, kT0 + 10 * kSec, 0));
    EXPECT_TRUE(is_full(limit, empty, kT0 + kHour, 0));
    const State in_debt{-5, kT0};
    EXPECT_FALSE(is_full(limit, in_debt, kT0 + 10 * kSec, 0));
    EXPECT_TRUE(is_full(limit, in_debt, kT0 + 15 * kSec, 0));
}

TEST(IsFull, FullAndAboveCapacity) {
    const Limit limit = Make(Algorithm::token_bucket, 10, 10 * kSec, 10);
    EXPECT_TRUE(is_full(limit, State{10, kT0}, kT0, 0));
    EXPECT_TRUE(is_full(limit, State{50, kT0}, kT0, 0));  // capacity lowered since the write
    EXPECT_FALSE(is_full(limit, State{9.5, kT0}, kT0, 0));
}

// A row stored later than now (the clock stepped back) is never deletable, even at full capacity: it
// holds the key's time. Deleted, the key would start afresh at now and refill again up to that instant
// (the core fuzzer's crash-cleanup-while-clock-behind-mints-units).
TEST(IsFull, ClockSteppedBack) {
    const Limit limit = Make(Algorithm::token_bucket, 10, 10 * kSec, 10);
    EXPECT_FALSE(is_full(limit, State{10, kT0}, kT0 - kHour, 0));
    EXPECT_FALSE(is_full(limit, State{5, kT0}, kT0 - kHour, 0));
    EXPECT_TRUE(is_full(limit, State{10, kT0}, kT0, 0));
}

TEST(IsFull, FixedWindowAtTheBoundary) {
    const Limit limit = Make(Algorithm::fixed_window, 5, 2 * kMin, 12);
    const Micros w = (kT0 / limit.period) * limit.period;
    const State stored{0, w + 1};
    EXPECT_FALSE(is_full(limit, stored, w + 3 * limit.period - 1, 0));
    EXPECT_TRUE(is_full(limit, stored, w + 3 * limit.period, 0));
}

TEST(IsFull, DeletingAFullRowChangesNoDecision) {
    std::mt19937_64 rng(0xf011);
    std::uniform_real_distribution<double> unit(0, 1);
    int full = 0;
    for (int trial = 0; trial < 20000; ++trial) {
        const Algorithm algorithm = unit(rng) < 0.5 ? Algorithm::token_bucket : Algorithm::fixed_window;
        const double rate = std::exp(unit(rng) * 12 - 4);
        const Micros period = 1 + static_cast<Micros>(unit(rng) * 3600.0 * kSec);
        const double capacity = rate * std::exp(unit(rng) * 4 - 2);
        const Limit limit = Make(algorithm, rate, period, capacity);
        const State stored{capacity * (unit(rng) * 1.2 - 0.2), kT0};
        const Micros now =
            kT0 + static_cast<Micros>(unit(rng) * 3 * static_cast<double>(period) * std::max(1.0, capacity / rate));
        if (!is_full(limit, stored, now, 0)) continue;
        ++full;
        const double cost = capacity * (0.01 + 0.99 * unit(rng));
        const Outcome with_row = request(limit, &stored, now, cost, false, 0);
        const Outcome without = request(limit, nullptr, now, cost, false, 0);
        EXPECT_EQ(with_row.allowed, without.allowed);
        EXPECT_NEAR(with_row.balance, without.balance, tolerance(limit));
        EXPECT_EQ(refund(limit, &stored, now, cost, 0).reset_after, 0);
    }
    EXPECT_GT(full, 2000);
}

}  // namespace
}  // namespace pg_ratelimit::core
