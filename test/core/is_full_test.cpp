// is_full(): a stored key that has refilled to capacity is equivalent to no row (rate_limit_cleanup
// deletes such rows), so a request on it must decide like a request on a key without a row.
#include <gtest/gtest.h>

#include <algorithm>

#include "core/algorithms.hpp"
#include "random_limits.hpp"
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

// For every algorithm, random stored keys in its own encoding: whenever is_full says a row may go, a request
// on it decides as on no row, and a refund reports the key full.
TEST(IsFull, DeletingAFullRowChangesNoDecision) {
    for (const Algorithm algorithm : kAllAlgorithms) {
        Random random(0xf011 + static_cast<std::uint64_t>(algorithm));
        int full = 0;
        for (int trial = 0; trial < 20000; ++trial) {
            const Keyed s = RandomLimit(random, algorithm, /*allow_unlimited=*/false);
            const Limit &limit = s.limit;
            const double balance = std::min(limit.capacity * random.Uniform(-0.2, 1.2), limit.capacity);
            const State stored = Encode(random, s, balance, kT0);
            const Micros now = kT0 + random.Int(0, 3 * FillTime(limit));
            if (!is_full(limit, stored, now, s.origin)) continue;
            ++full;
            const double cost = limit.capacity * random.Uniform(0.01, 1);
            const Outcome with_row = request(limit, &stored, now, cost, false, s.origin);
            const Outcome without = request(limit, nullptr, now, cost, false, s.origin);
            EXPECT_EQ(with_row.allowed, without.allowed) << Describe(limit, s.origin) << " " << Describe(stored);
            EXPECT_NEAR(with_row.balance, without.balance, tolerance(limit)) << Describe(limit, s.origin);
            EXPECT_EQ(refund(limit, &stored, now, cost, s.origin).reset_after, 0) << Describe(limit, s.origin);
        }
        EXPECT_GT(full, 2000) << AlgorithmName(algorithm);
    }
}

// The same for calendar limits (fixed windows of days, weeks or months in the test zones).
TEST(IsFull, CalendarDeletingAFullRowChangesNoDecision) {
    Random random(0xf011ca1);
    int full = 0;
    for (int trial = 0; trial < 5000; ++trial) {
        const Keyed s = RandomCalendarLimit(random, /*allow_unlimited=*/false);
        const Limit &limit = s.limit;
        const double balance = std::min(limit.capacity * random.Uniform(-0.2, 1.2), limit.capacity);
        const Micros written = CalendarInstant(random, limit);
        const State stored = Encode(random, s, balance, written);
        const Micros now = written + random.Int(0, 3 * FillTime(limit));
        if (!is_full(limit, stored, now, s.origin)) continue;
        ++full;
        const double cost = limit.capacity * random.Uniform(0.01, 1);
        const Outcome with_row = request(limit, &stored, now, cost, false, s.origin);
        const Outcome without = request(limit, nullptr, now, cost, false, s.origin);
        EXPECT_EQ(with_row.allowed, without.allowed) << Describe(limit, s.origin) << " " << Describe(stored);
        EXPECT_NEAR(with_row.balance, without.balance, tolerance(limit)) << Describe(limit, s.origin);
        EXPECT_EQ(refund(limit, &stored, now, cost, s.origin).reset_after, 0) << Describe(limit, s.origin);
    }
    EXPECT_GT(full, 500);
}

}  // namespace
}  // namespace pg_ratelimit::core
