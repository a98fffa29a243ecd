// Regressions for the findings of the core fuzzer (test/fuzz). Each test is the decoded input of the
// corpus file named after it (test/fuzz/corpus/crash-*), reduced to the core calls it makes.
#include <gtest/gtest.h>

#include <cfloat>
#include <limits>

#include "core/algorithms.hpp"
#include "core/validate.hpp"
#include "support.hpp"

namespace pg_ratelimit::core {
namespace {

// PostgreSQL's last TimestampTz (datatype/timestamp.h), exclusive: 294277-01-01.
constexpr Micros kPgEndTimestamp = 9223371331200000000;

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

// crash-gcra-tat-beyond-int64-mints-units: near the end of PostgreSQL's timestamp range a GCRA key's TAT
// can lie beyond the last int64 instant. ts saturated there and the rest of what was owed was lost: the
// key that had just spent its whole capacity read back as holding 978 of its 1000 units. It must decide as
// the token bucket it stands for.
TEST(FuzzFindings, GcraTatBeyondTheLastInstantKeepsWhatIsOwed) {
    const Limit gcra = Gcra(1000, kYear, 1000);
    const Limit bucket = TokenBucket(1000, kYear, 1000);
    const Micros now = kPgEndTimestamp - 412;
    const Outcome all = Take(gcra, nullptr, now, 1000);
    ASSERT_TRUE(all.allowed);
    EXPECT_NEAR(balance_at(gcra, &all.next, now, 0), 0, tolerance(gcra));
    const Outcome bucket_all = Take(bucket, nullptr, now, 1000);
    EXPECT_EQ(all.reset_after, bucket_all.reset_after);
    const Outcome more = Take(gcra, &all.next, now, 1);
    EXPECT_FALSE(more.allowed) << more.balance;
    EXPECT_EQ(more.retry_after, Take(bucket, &bucket_all.next, now, 1).retry_after);
    EXPECT_EQ(more.retry_after, kYear / 1000);  // one emission interval
}

// The same loss for a debt of more than MAX_OWED (4e18 us) of refill: ts held at most that much and the rest
// was dropped, so the key read back 10.6 units richer than its debt of 716.8 and admitted a reservation
// beyond max_reserved.
TEST(FuzzFindings, GcraDebtBeyondMaxOwedIsKept) {
    const Limit limit = Gcra(0.7, MAX_PERIOD, 179.2, 720);
    State state{};
    const State *stored = nullptr;
    for (int k = 0; k < 5; ++k) {
        const Outcome out = request(limit, stored, kT0, 179.2, /*reserve=*/true, 0);
        ASSERT_TRUE(out.allowed) << k;
        state = out.next;
        stored = &state;
    }
    // 896 units owed at 0.7 per 100 years: 4.05e18 us.
    EXPECT_NEAR(balance_at(limit, stored, kT0, 0), 179.2 - 896, 1e-9);
    EXPECT_FALSE(request(limit, stored, kT0, 3.5, /*reserve=*/true, 0).allowed);  // a debt of 720.3
}

// crash-sliding-window-quanta-beyond-int64-lose-units: in the window that contains the end of
// PostgreSQL's timestamp range, a previous count whose quanta end beyond the last int64 instant was moved
// into the current count but written at ts = now, whose offset into the window then read as a second
// previous count: the key lost about 2 of its 10 units. Written at the window's start instead, it holds
// what it was left.
TEST(FuzzFindings, SlidingWindowQuantaBeyondTheLastInstantKeepTheBalance) {
    const Limit limit = SlidingWindow(10, MAX_PERIOD);
    const Micros window = kPgEndTimestamp / MAX_PERIOD * MAX_PERIOD;  // its end is past int64
    ASSERT_GT(static_cast<__int128>(window) + MAX_PERIOD, static_cast<__int128>(std::numeric_limits<Micros>::max()));
    const State previous = Take(limit, nullptr, window - MAX_PERIOD, 8).next;
    const Micros now = kPgEndTimestamp - 1;
    const Outcome one = Take(limit, &previous, now, 1);
    ASSERT_TRUE(one.allowed);
    const double back = balance_at(limit, &one.next, now, 0);
    EXPECT_LE(back, one.balance + tolerance(limit));
    EXPECT_GE(back, one.balance - 1e-9) << "written " << one.next.value << " at " << one.next.ts;
    EXPECT_TRUE(Take(limit, &one.next, now, 6).allowed);  // 6.77 were left
}

}  // namespace
}  // namespace pg_ratelimit::core
