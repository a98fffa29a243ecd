// Reservations: a request that would go below zero is allowed with reserve = true while the debt stays
// within max_reserved (+infinity = unlimited); retry_after is then when the debt is repaid (token bucket)
// or the start of the window in which it is repaid (fixed window).
#include <gtest/gtest.h>

#include <limits>

#include "core/algorithms.hpp"
#include "support.hpp"

namespace pg_ratelimit::core {
namespace {

constexpr double kUnlimited = std::numeric_limits<double>::infinity();

Outcome Reserve(const Limit &limit, const State *stored, Micros now, double cost) {
    return request(limit, stored, now, cost, /*reserve=*/true, window_origin(limit, 0));
}

// Article example 4: 3 tokens, request 5 with reserve: value -2, retry_after = the time for 2 tokens.
TEST(Reservation, ArticleThreeTokensRequestFive) {
    const Limit limit = TokenBucket(10, 10 * kSec, 10, kUnlimited);  // 1 token/s
    const State stored{3, kT0};
    const Outcome out = Reserve(limit, &stored, kT0, 5);
    EXPECT_TRUE(out.allowed);
    EXPECT_TRUE(out.write);
    EXPECT_DOUBLE_EQ(out.balance, -2);
    EXPECT_DOUBLE_EQ(out.next.value, -2);
    EXPECT_EQ(out.next.ts, kT0);
    EXPECT_EQ(out.retry_after, 2 * kSec);
    EXPECT_EQ(out.reset_after, 12 * kSec);
    EXPECT_EQ(whole_units(limit, out.balance), 0);

    // Without reserve the same request is denied and must wait for the same 2 tokens.
    const Outcome denied = Take(limit, &stored, kT0, 5);
    EXPECT_FALSE(denied.allowed);
    EXPECT_FALSE(denied.write);
    EXPECT_DOUBLE_EQ(denied.balance, 3);
    EXPECT_EQ(denied.retry_after, 2 * kSec);
}

TEST(Reservation, DebtExactlyAtMaxReservedIsAllowed) {
    const Limit limit = TokenBucket(10, 10 * kSec, 10, 2);
    const State stored{3, kT0};
    const Outcome out = Reserve(limit, &stored, kT0, 5);
    EXPECT_TRUE(out.allowed);
    EXPECT_DOUBLE_EQ(out.balance, -2);
    EXPECT_EQ(out.retry_after, 2 * kSec);
}

TEST(Reservation, DebtBeyondMaxReservedIsDenied) {
    const Limit limit = TokenBucket(10, 10 * kSec, 10, 1.5);
    const State stored{3, kT0};
    const Outcome out = Reserve(limit, &stored, kT0, 5);
    EXPECT_FALSE(out.allowed);
    EXPECT_FALSE(out.write);
    EXPECT_DOUBLE_EQ(out.balance, 3);
    // The same reserving request succeeds once the debt it creates fits: at 3.5 units, 0.5 s later.
    EXPECT_EQ(out.retry_after, 500 * kMs);
    EXPECT_FALSE(Reserve(limit, &stored, kT0 + out.retry_after - 1, 5).allowed);
    const Outcome later = Reserve(limit, &stored, kT0 + out.retry_after, 5);
    EXPECT_TRUE(later.allowed);
    EXPECT_NEAR(later.balance, -1.5, 1e-9);
    EXPECT_EQ(later.retry_after, 1500 * kMs);
}

TEST(Reservation, ZeroMaxReservedIsLikeNoReservation) {
    const Limit limit = TokenBucket(10, 10 * kSec, 10, 0);
    const State stored{3, kT0};
    const Outcome reserve = Reserve(limit, &stored, kT0, 5);
    const Outcome take = Take(limit, &stored, kT0, 5);
    EXPECT_FALSE(reserve.allowed);
    EXPECT_EQ(reserve.allowed, take.allowed);
    EXPECT_EQ(reserve.retry_after, take.retry_after);
    EXPECT_TRUE(Reserve(limit, &stored, kT0, 3).allowed);
}

TEST(Reservation, MaxReservedIgnoredWithoutReserve) {
    const Limit limit = TokenBucket(10, 10 * kSec, 10, kUnlimited);
    const State stored{3, kT0};
    const Outcome out = Take(limit, &stored, kT0, 5);
    EXPECT_FALSE(out.allowed);
    EXPECT_EQ(out.retry_after, 2 * kSec);
}

TEST(Reservation, DebtDeepensAndIsRepaidInOrder) {
    const Limit limit = TokenBucket(10, 10 * kSec, 10, 10);
    const State stored{-2, kT0};
    const Outcome deeper = Reserve(limit, &stored, kT0, 3);
    EXPECT_TRUE(deeper.allowed);
    EXPECT_DOUBLE_EQ(deeper.balance, -5);
    EXPECT_EQ(deeper.retry_after, 5 * kSec);
    EXPECT_EQ(deeper.reset_after, 15 * kSec);

    // A plain request must wait for the debt and for its own unit.
    const Outcome plain = Take(limit, &deeper.next, kT0, 1);
    EXPECT_FALSE(plain.allowed);
    EXPECT_DOUBLE_EQ(plain.balance, -5);
    EXPECT_EQ(plain.retry_after, 6 * kSec);
    EXPECT_FALSE(Take(limit, &deeper.next, kT0 + 5 * kSec, 1).allowed);
    EXPECT_TRUE(Take(limit, &deeper.next, kT0 + 6 * kSec, 1).allowed);

    // Reserving again past max_reserved (10) is denied until the debt would fit.
    const Outcome too_deep = Reserve(limit, &deeper.next, kT0, 6);
    EXPECT_FALSE(too_deep.allowed);
    EXPECT_EQ(too_deep.retry_after, 1 * kSec);
}

TEST(Reservation, UnlimitedAllowsAnyDebt) {
    const Limit limit = TokenBucket(10, 10 * kSec, 10, kUnlimited);
    State state{10, kT0};
    for (int k = 0; k < 100; ++k) {
        const Outcome out = Reserve(limit, &state, kT0, 10);
        ASSERT_TRUE(out.allowed) << k;
        state = out.next;
    }
    EXPECT_DOUBLE_EQ(state.value, -990);
    const Outcome last = Reserve(limit, &state, kT0, 1);
    EXPECT_EQ(last.retry_after, 991 * kSec);
}

TEST(Reservation, WithoutRowStartsFull) {
    const Limit limit = TokenBucket(10, 10 * kSec, 10, kUnlimited);
    const Outcome out = Reserve(limit, nullptr, kT0, 10);
    EXPECT_TRUE(out.allowed);
    EXPECT_DOUBLE_EQ(out.balance, 0);
    EXPECT_EQ(out.retry_after, 0);  // no debt: runs now
}

TEST(Reservation, NoDebtMeansRetryAfterZero) {
    const Limit limit = TokenBucket(10, 10 * kSec, 10, kUnlimited);
    const State stored{6, kT0};
    const Outcome out = Reserve(limit, &stored, kT0, 4);
    EXPECT_TRUE(out.allowed);
    EXPECT_DOUBLE_EQ(out.balance, 2);
    EXPECT_EQ(out.retry_after, 0);
}

TEST(Reservation, FixedWindowDebtRepaidAtAWindowStart) {
    const Limit limit = FixedWindow(5, 2 * kMin, 5, 0, kUnlimited);
    const Micros w = (kT0 / limit.period) * limit.period;
    const Micros now = w + 10 * kSec;
    const State stored{1, w + kSec};

    // Debt 4: repaid by the next window (+5).
    const Outcome one = Reserve(limit, &stored, now, 5);
    EXPECT_TRUE(one.allowed);
    EXPECT_DOUBLE_EQ(one.balance, -4);
    EXPECT_EQ(one.retry_after, w + limit.period - now);
    EXPECT_EQ(one.reset_after, w + 2 * limit.period - now);  // -4 -> 1 -> 5

    // Debt 9 needs two windows; debt of exactly 10 also needs exactly two.
    const State in_debt{-4, now};
    const Outcome two = Reserve(limit, &in_debt, now, 5);
    EXPECT_DOUBLE_EQ(two.balance, -9);
    EXPECT_EQ(two.retry_after, w + 2 * limit.period - now);
    const Outcome exact = Reserve(limit, &in_debt, now, 6);
    EXPECT_DOUBLE_EQ(exact.balance, -10);
    EXPECT_EQ(exact.retry_after, w + 2 * limit.period - now);

    // After the debt is repaid, at that window start, the balance is zero: a plain request must wait again.
    const Outcome repaid = Take(limit, &exact.next, w + 2 * limit.period, 1);
    EXPECT_FALSE(repaid.allowed);
    EXPECT_NEAR(repaid.balance, 0, 1e-9);
    EXPECT_EQ(repaid.retry_after, limit.period);
}

TEST(Reservation, FixedWindowDeniedBeyondMaxReserved) {
    const Limit limit = FixedWindow(5, 2 * kMin, 5, 0, 3);
    const Micros w = (kT0 / limit.period) * limit.period;
    const Micros now = w + 10 * kSec;
    const State stored{-2, w + kSec};
    const Outcome out = Reserve(limit, &stored, now, 5);  // would leave -7
    EXPECT_FALSE(out.allowed);
    EXPECT_FALSE(out.write);
    // Next window: 3 units, 5 requested, debt 2 <= 3.
    EXPECT_EQ(out.retry_after, w + limit.period - now);
    EXPECT_FALSE(Reserve(limit, &stored, w + limit.period - 1, 5).allowed);
    const Outcome next = Reserve(limit, &stored, w + limit.period, 5);
    EXPECT_TRUE(next.allowed);
    EXPECT_DOUBLE_EQ(next.balance, -2);
    EXPECT_EQ(next.retry_after, limit.period);
}

TEST(Reservation, FractionalDebt) {
    const Limit limit = TokenBucket(10, 10 * kSec, 10, kUnlimited);
    const State stored{0.25, kT0};
    const Outcome out = Reserve(limit, &stored, kT0, 1);
    EXPECT_TRUE(out.allowed);
    EXPECT_DOUBLE_EQ(out.balance, -0.75);
    EXPECT_EQ(out.retry_after, 750 * kMs);
    EXPECT_EQ(whole_units(limit, out.balance), 0);
}

}  // namespace
}  // namespace pg_ratelimit::core
