// Regressions for the findings of the core fuzzer (test/fuzz). Each test is the decoded input of the
// corpus file named after it (test/fuzz/corpus/crash-*), reduced to the core calls it makes.
#include <gtest/gtest.h>

#include <cfloat>

#include "core/algorithms.hpp"
#include "core/validate.hpp"
#include "support.hpp"

namespace pg_ratelimit::core {
namespace {

// crash-token-bucket-admits-1us-before-retry-after: the wait was a closed form minus half the tolerance,
// rounded up; when the exact wait lay between n + tolerance/2 and n + tolerance microseconds of refill,
// it reported n + 1 while admission already forgave the shortfall at n.
TEST(FuzzFindings, TokenBucketDeniedOneMicrosecondBeforeRetryAfter) {
    const Limit limit = TokenBucket(7, kDay, 10000);
    const State stored{4, kT0};
    const Outcome denied = Take(limit, &stored, kT0, 8);
    ASSERT_FALSE(denied.allowed);
    EXPECT_TRUE(Take(limit, &stored, kT0 + denied.retry_after, 8).allowed);
    EXPECT_FALSE(Take(limit, &stored, kT0 + denied.retry_after - 1, 8).allowed) << denied.retry_after;
}

// The same rounding for reset_after: from a full key, 4 units; full already 1 us before reset_after.
TEST(FuzzFindings, TokenBucketNotFullOneMicrosecondBeforeResetAfter) {
    const Limit limit = TokenBucket(7, kDay, 10000);
    const Outcome out = Take(limit, nullptr, kT0, 4);
    ASSERT_TRUE(out.allowed);
    EXPECT_TRUE(is_full(limit, out.next, kT0 + out.reset_after, 0));
    EXPECT_FALSE(is_full(limit, out.next, kT0 + out.reset_after - 1, 0)) << out.reset_after;
}

// crash-token-bucket-slow-denied-at-retry-after: when a microsecond of refill is below the float
// resolution of the balance (fill times of decades), the closed form's wait fell short.
TEST(FuzzFindings, TokenBucketSlowRefillServedAtRetryAfter) {
    const Limit limit = TokenBucket(1.0 / 3, MAX_PERIOD, 1.0 / 3);
    const State empty{0, kT0};
    const double cost = 0.19390304431247862;
    const Outcome denied = Take(limit, &empty, kT0, cost);
    ASSERT_FALSE(denied.allowed);
    ASSERT_LT(denied.retry_after, MAX_DURATION);
    EXPECT_TRUE(Take(limit, &empty, kT0 + denied.retry_after, cost).allowed) << denied.retry_after;
    EXPECT_FALSE(Take(limit, &empty, kT0 + denied.retry_after - 1, cost).allowed) << denied.retry_after;
}

// The same regime, reset_after: rate 1 per year, capacity 200 (a 200-year fill).
TEST(FuzzFindings, TokenBucketSlowRefillResetAfterExact) {
    const Limit limit = TokenBucket(1, kYear, 200);
    const Outcome out = Take(limit, nullptr, kT0, 200);
    ASSERT_TRUE(out.allowed);
    EXPECT_TRUE(is_full(limit, out.next, kT0 + out.reset_after, 0));
    EXPECT_FALSE(is_full(limit, out.next, kT0 + out.reset_after - 1, 0)) << out.reset_after;
}

// crash-fixed-window-wait-beyond-2p53-us: the window count times the period was added in double; beyond
// 2^53 us (285 years) the instant was rounded, before the boundary. Grid origin 1354950657.
TEST(FuzzFindings, FixedWindowLongWaitServedAtRetryAfter) {
    const Limit limit = FixedWindow(1e-9, kHour, 140, 1354950657);
    const State empty{0, kT0};
    const Outcome denied = request(limit, &empty, kT0, 0.5, false, limit.start);
    ASSERT_FALSE(denied.allowed);
    ASSERT_LT(denied.retry_after, MAX_DURATION);
    EXPECT_TRUE(request(limit, &empty, kT0 + denied.retry_after, 0.5, false, limit.start).allowed)
        << denied.retry_after;
    EXPECT_FALSE(request(limit, &empty, kT0 + denied.retry_after - 1, 0.5, false, limit.start).allowed)
        << denied.retry_after;
}

// crash-is-full-disagrees-with-check-of-capacity: is_full compared level >= capacity - tolerance while
// admission computes level - cost >= -tolerance; they rounded differently at the boundary, so cleanup
// could delete a row that denied a request for the whole capacity, which no row would.
TEST(FuzzFindings, IsFullAgreesWithARequestForTheWholeCapacity) {
    const Limit limit = TokenBucket(1000, kSec, 1000);
    const Outcome out = Take(limit, nullptr, kT0, tolerance(limit));
    ASSERT_TRUE(out.allowed);
    EXPECT_EQ(is_full(limit, out.next, kT0, 0), Take(limit, &out.next, kT0, limit.capacity).allowed);
}

// crash-cleanup-while-clock-behind-mints-units: is_full evaluated a row at max(now, ts), so with the clock
// behind a full row it was deletable, and the key then refilled again from the earlier now.
TEST(FuzzFindings, DeletingAFullRowWhileTheClockIsBehindItMintsNothing) {
    const Limit limit = TokenBucket(10, kSec, 10);
    const State row{10, kT0};               // written full at kT0 (a refund)
    const Micros behind = kT0 - 10 * kSec;  // the clock stepped back
    const bool deletable = is_full(limit, row, behind, 0);
    const Outcome kept = Take(limit, &row, behind, 10);
    const Outcome fresh = Take(limit, nullptr, behind, 10);
    ASSERT_TRUE(kept.allowed && fresh.allowed);
    const bool kept_later = Take(limit, &kept.next, kT0, 10).allowed;
    const bool fresh_later = Take(limit, &fresh.next, kT0, 10).allowed;
    EXPECT_TRUE(!deletable || kept_later == fresh_later) << deletable << kept_later << fresh_later;
}

// crash-denormal-capacity-reset-after-underflows: with capacity DBL_MIN the window count of a denormal
// shortfall divided by the rate underflowed to 0: reset_after was 0 although the key was not full. Unit
// counts below MIN_UNITS are refused now; at MIN_UNITS the waits are exact.
TEST(FuzzFindings, DenormalUnitsRefusedAndTheLeastAreExact) {
    EXPECT_EQ(validate_limit(FixedWindow(1e9, kYear, DBL_MIN, 0)), LimitProblem::capacity);
    EXPECT_EQ(validate_limit(FixedWindow(DBL_MIN, kYear, 1, 0)), LimitProblem::rate);
    EXPECT_EQ(validate_cost(FixedWindow(1, kYear, 1, 0), 1.0361307573072619e-317), CostProblem::not_positive_finite);
    const Limit limit = FixedWindow(MIN_UNITS, kYear, MIN_UNITS, 0);
    const Outcome out = Take(limit, nullptr, kT0, MIN_UNITS / 2 + MIN_UNITS / 4);
    ASSERT_TRUE(out.allowed);
    EXPECT_GT(out.reset_after, 0);
    EXPECT_TRUE(is_full(limit, out.next, kT0 + out.reset_after, 0));
    EXPECT_FALSE(is_full(limit, out.next, kT0 + out.reset_after - 1, 0));
}

}  // namespace
}  // namespace pg_ratelimit::core
