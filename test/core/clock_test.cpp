// Time: the clock stepping backwards (now < stored ts) mints nothing, the key is evaluated at
// max(now, ts) while durations stay relative to the real now; and elapsed times from years up to the
// ends of PostgreSQL's timestamp range.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "core/algorithms.hpp"
#include "core/validate.hpp"
#include "support.hpp"

namespace pg_ratelimit::core {
namespace {

// PostgreSQL's TimestampTz range (datatype/timestamp.h): 4714-11-24 BC and 294277-01-01, exclusive.
constexpr Micros kPgMinTimestamp = -211813488000000000;
constexpr Micros kPgEndTimestamp = 9223371331200000000;

// Takes unit requests at `now` until one is denied; returns how many were admitted.
int Drain(const Limit &limit, State &state, Micros now) {
    int admitted = 0;
    for (; admitted < 100000; ++admitted) {
        const Outcome out = Take(limit, &state, now);
        if (!out.allowed) break;
        state = out.next;
    }
    return admitted;
}

void ExpectSaneDurations(const Outcome &out) {
    EXPECT_GE(out.retry_after, 0);
    EXPECT_LE(out.retry_after, MAX_DURATION);
    EXPECT_GE(out.reset_after, 0);
    EXPECT_LE(out.reset_after, MAX_DURATION);
    EXPECT_TRUE(std::isfinite(out.balance));
}

TEST(ClockBackwards, TokenBucketMintsNothing) {
    const Limit limit = TokenBucket(10, 10 * kSec, 10);
    const State stored{2, kT0};
    const Outcome out = Take(limit, &stored, kT0 - kHour, 1);
    EXPECT_TRUE(out.allowed);
    EXPECT_DOUBLE_EQ(out.balance, 1);  // neither refilled nor drained by the negative elapsed time
    EXPECT_EQ(out.next.ts, kT0);       // the key stays at its own time
}

TEST(ClockBackwards, TokenBucketEarlierThenOriginalGivesNoMoreThanOnce) {
    const Limit limit = TokenBucket(10, 10 * kSec, 10);
    for (const Micros back : {Micros{1}, kSec, 7 * kSec, kHour, 10 * kYear}) {
        const State stored{3.5, kT0};
        State once = stored;
        const int single = Drain(limit, once, kT0);
        State twice = stored;
        const int both = Drain(limit, twice, kT0 - back) + Drain(limit, twice, kT0);
        EXPECT_LE(both, single) << back;
        EXPECT_EQ(single, 3);

        // And later on, stepping back first gained nothing either.
        const int later_once = Drain(limit, once, kT0 + 5 * kSec);
        const int later_twice = Drain(limit, twice, kT0 + 5 * kSec);
        EXPECT_LE(both + later_twice, single + later_once) << back;
    }
}

TEST(ClockBackwards, TokenBucketDurationsFromTheRealNow) {
    const Limit limit = TokenBucket(1, kSec, 10);
    const State stored{0, kT0};
    const Micros now = kT0 - 5 * kSec;
    const Outcome denied = Take(limit, &stored, now, 1);
    EXPECT_FALSE(denied.allowed);
    EXPECT_DOUBLE_EQ(denied.balance, 0);
    EXPECT_EQ(denied.retry_after, 6 * kSec);   // 5 s until the key's time, then 1 s of refill
    EXPECT_EQ(denied.reset_after, 15 * kSec);  // 5 s + 10 s
    EXPECT_FALSE(Take(limit, &stored, now + denied.retry_after - 1, 1).allowed);
    EXPECT_TRUE(Take(limit, &stored, now + denied.retry_after, 1).allowed);
}

TEST(ClockBackwards, TokenBucketResetAfterFromTheRealNow) {
    const Limit limit = TokenBucket(10, 10 * kSec, 10);
    const State stored{10, kT0};
    const Outcome out = Take(limit, &stored, kT0 - kHour, 1);
    EXPECT_TRUE(out.allowed);
    EXPECT_EQ(out.retry_after, 0);
    EXPECT_EQ(out.reset_after, kHour + kSec);
}

TEST(ClockBackwards, TokenBucketReservationRepaidFromTheRealNow) {
    Limit limit = TokenBucket(1, kSec, 10);
    limit.max_reserved = std::numeric_limits<double>::infinity();
    const State stored{1, kT0};
    const Outcome out = request(limit, &stored, kT0 - 2 * kSec, 4, true, 0);
    EXPECT_TRUE(out.allowed);
    EXPECT_DOUBLE_EQ(out.balance, -3);
    EXPECT_EQ(out.next.ts, kT0);
    EXPECT_EQ(out.retry_after, 5 * kSec);
}

TEST(ClockBackwards, FixedWindowMintsNothing) {
    const Limit limit = FixedWindow(5, 2 * kMin, 5, 0);
    const Micros w = (kT0 / limit.period) * limit.period;
    const State stored{3, w + limit.period + 5};
    // Three windows earlier: no windows added, none taken away.
    const Outcome out = Take(limit, &stored, w - 3 * limit.period, 1);
    EXPECT_TRUE(out.allowed);
    EXPECT_DOUBLE_EQ(out.balance, 2);
    EXPECT_EQ(out.next.ts, w + limit.period + 5);
    // Back at the key's window: still no boundary crossed.
    const Outcome same = Take(limit, &out.next, w + limit.period + 6, 2);
    EXPECT_TRUE(same.allowed);
    EXPECT_DOUBLE_EQ(same.balance, 0);
    EXPECT_FALSE(Take(limit, &same.next, w + 2 * limit.period - 1, 1).allowed);
}

TEST(ClockBackwards, FixedWindowEarlierThenOriginalGivesNoMoreThanOnce) {
    const Limit limit = FixedWindow(5, 2 * kMin, 12, 0);
    const Micros w = (kT0 / limit.period) * limit.period;
    for (const Micros back : {Micros{1}, Micros{6}, limit.period, 5 * limit.period + 3, 3 * kYear}) {
        const State stored{4, w + 5};
        State once = stored;
        const int single = Drain(limit, once, w + 5);
        State twice = stored;
        const int both = Drain(limit, twice, w + 5 - back) + Drain(limit, twice, w + 5);
        EXPECT_LE(both, single) << back;
        EXPECT_EQ(single, 4);
        const int later_once = Drain(limit, once, w + 2 * limit.period);
        const int later_twice = Drain(limit, twice, w + 2 * limit.period);
        EXPECT_LE(both + later_twice, single + later_once) << back;
    }
}

TEST(ClockBackwards, FixedWindowDurationsFromTheRealNow) {
    const Limit limit = FixedWindow(5, 2 * kMin, 5, 0);
    const Micros w = (kT0 / limit.period) * limit.period;
    const State stored{0, w + limit.period + 5};
    const Micros now = w + 5;  // one window earlier than the key
    const Outcome denied = Take(limit, &stored, now, 1);
    EXPECT_FALSE(denied.allowed);
    // The key refills at the boundary after its own window, w + 2 * period.
    EXPECT_EQ(denied.retry_after, w + 2 * limit.period - now);
    EXPECT_EQ(denied.reset_after, w + 2 * limit.period - now);
    EXPECT_FALSE(Take(limit, &stored, now + denied.retry_after - 1, 1).allowed);
    EXPECT_TRUE(Take(limit, &stored, now + denied.retry_after, 1).allowed);
}

TEST(HugeElapsed, TokenBucketIdleForCenturies) {
    const Limit limit = TokenBucket(1e-3, kDay, 5);
    const State stored{-2, 0};
    const Micros now = 290000 * kYear;  // about the year 292,000
    const Outcome out = Take(limit, &stored, now, 1);
    ExpectSaneDurations(out);
    EXPECT_TRUE(out.allowed);
    EXPECT_DOUBLE_EQ(out.balance, 4);
}

TEST(HugeElapsed, TokenBucketClockBackCenturies) {
    const Limit limit = TokenBucket(10, 10 * kSec, 10);
    const State stored{0, kT0 + 250000 * kYear};
    const Outcome out = Take(limit, &stored, kT0, 1);
    ExpectSaneDurations(out);
    EXPECT_FALSE(out.allowed);
    EXPECT_DOUBLE_EQ(out.balance, 0);
    EXPECT_EQ(out.retry_after, MAX_DURATION);  // 250,000 years is past the longest reported duration
    EXPECT_EQ(out.reset_after, MAX_DURATION);
}

TEST(HugeElapsed, FixedWindowClockBackCenturies) {
    const Limit limit = FixedWindow(5, 2 * kMin, 5, 0);
    const State stored{0, kT0 + 250000 * kYear};
    const Outcome out = Take(limit, &stored, kT0, 1);
    ExpectSaneDurations(out);
    EXPECT_FALSE(out.allowed);
    EXPECT_EQ(out.retry_after, MAX_DURATION);
}

TEST(HugeElapsed, FixedWindowIdleForCenturies) {
    const Limit limit = FixedWindow(1, kSec, 3, 0);
    const State stored{0, 1};
    const Outcome out = Take(limit, &stored, 290000 * kYear + 17, 3);
    ExpectSaneDurations(out);
    EXPECT_TRUE(out.allowed);
    EXPECT_DOUBLE_EQ(out.balance, 0);
}

// The whole PostgreSQL timestamp range: a key written at the earliest representable time and evaluated
// at the latest one (and the reverse, a clock stepped back across the range). The elapsed time, about
// 9.4e18 us, does not fit in int64.
//
// SPEC VIOLATIONS (kept failing on purpose; low severity, only at the ends of PostgreSQL's range, where
// two instants are more than ~292,000 years apart or a timestamp is within ~10,000 years of int64's end):
// the spec asks for "elapsed time negative or huge (... near int64 limits of plausible timestamps)" and
// "very long idle: capped at capacity, no overflow/NaN". The core subtracts Micros in int64
// (token_bucket_level: at - stored.ts; decision.cpp time_to_gain: at - now; fixed_window window_index:
// t - origin), which overflows (undefined behaviour; in practice it wraps): the idle key below comes
// back with a balance of about -9e12 instead of full, the stepped-back one reports a negative
// retry_after, and the fixed-window grid shifts.
TEST(PostgresTimestampRange, TokenBucketIdleAcrossTheWholeRange) {
    const Limit limit = TokenBucket(10, 10 * kSec, 10);
    const State stored{0, kPgMinTimestamp};
    const Outcome out = Take(limit, &stored, kPgEndTimestamp - 1, 1);
    ExpectSaneDurations(out);
    EXPECT_TRUE(out.allowed);
    EXPECT_DOUBLE_EQ(out.balance, 9);
}

TEST(PostgresTimestampRange, TokenBucketClockBackAcrossTheWholeRange) {
    const Limit limit = TokenBucket(10, 10 * kSec, 10);
    const State stored{0, kPgEndTimestamp - 1};
    const Outcome out = Take(limit, &stored, kPgMinTimestamp, 1);
    ExpectSaneDurations(out);
    EXPECT_FALSE(out.allowed);
    EXPECT_DOUBLE_EQ(out.balance, 0);
    EXPECT_EQ(out.retry_after, MAX_DURATION);
    EXPECT_EQ(out.reset_after, MAX_DURATION);
}

TEST(PostgresTimestampRange, TokenBucketWithinInt64) {
    // From 2000-01-01 to the last timestamp: large but representable.
    const Limit limit = TokenBucket(1e-9, MAX_PERIOD, 1);
    const State stored{0, 0};
    const Outcome out = Take(limit, &stored, kPgEndTimestamp - 1, 1);
    ExpectSaneDurations(out);
    // 9.2e18 us at 1e-9 per 100 years (3.16e15 us) is about 2.9e-6 units: still denied.
    EXPECT_FALSE(out.allowed);
    EXPECT_EQ(out.retry_after, MAX_DURATION);
}

TEST(PostgresTimestampRange, FixedWindowBoundaryNearTheEndWithEarliestStart) {
    // The earliest valid start and the latest timestamp: t - start is about 9.5e18 us.
    const Micros period = 7 * kSec;  // not a divisor of 2^64
    const Limit limit = FixedWindow(2, period, 2, -MAX_START_OFFSET);
    const __int128 offset = static_cast<__int128>(kPgEndTimestamp - 1) - static_cast<__int128>(-MAX_START_OFFSET);
    const Micros boundary = static_cast<Micros>(static_cast<__int128>(-MAX_START_OFFSET) + (offset / period) * period);
    ASSERT_LT(boundary, kPgEndTimestamp);
    ASSERT_GT(boundary, kPgEndTimestamp - period - 1);
    const State stored{0, boundary - 1};
    const Outcome before = Take(limit, &stored, boundary - 1, 1);
    ExpectSaneDurations(before);
    EXPECT_FALSE(before.allowed);
    EXPECT_EQ(before.retry_after, 1);
    const Outcome at = Take(limit, &stored, boundary, 1);
    ExpectSaneDurations(at);
    EXPECT_TRUE(at.allowed);
    EXPECT_DOUBLE_EQ(at.balance, 1);
}

TEST(PostgresTimestampRange, FixedWindowAcrossTheWholeRange) {
    const Limit limit = FixedWindow(2, 7 * kSec, 6, MAX_START_OFFSET);
    const State stored{0, kPgMinTimestamp};
    const Outcome out = Take(limit, &stored, kPgEndTimestamp - 1, 6);
    ExpectSaneDurations(out);
    EXPECT_TRUE(out.allowed);
    EXPECT_DOUBLE_EQ(out.balance, 0);
}

TEST(PostgresTimestampRange, FixedWindowClockBackAcrossTheWholeRange) {
    const Limit limit = FixedWindow(2, 7 * kSec, 6, 0);
    const State stored{0, kPgEndTimestamp - 1};
    const Outcome out = Take(limit, &stored, kPgMinTimestamp, 1);
    ExpectSaneDurations(out);
    EXPECT_FALSE(out.allowed);
    EXPECT_EQ(out.retry_after, MAX_DURATION);
}

}  // namespace
}  // namespace pg_ratelimit::core
