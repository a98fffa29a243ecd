// refund(): gives units back, never above capacity, always allowed; retry_after is until the key is out
// of debt; a key without a row is already full and needs no write.
#include <gtest/gtest.h>

#include "core/algorithms.hpp"
#include "support.hpp"

namespace pg_ratelimit::core {
namespace {

TEST(Refund, GivesUnitsBack) {
    const Limit limit = TokenBucket(10, 10 * kSec, 10);
    const State stored{2, kT0};
    const Outcome out = refund(limit, &stored, kT0, 3, 0);
    EXPECT_TRUE(out.allowed);
    EXPECT_TRUE(out.write);
    EXPECT_DOUBLE_EQ(out.balance, 5);
    EXPECT_DOUBLE_EQ(out.next.value, 5);
    EXPECT_EQ(out.next.ts, kT0);
    EXPECT_EQ(out.retry_after, 0);
    EXPECT_EQ(out.reset_after, 5 * kSec);
}

TEST(Refund, NeverAboveCapacity) {
    const Limit limit = TokenBucket(10, 10 * kSec, 10);
    const State stored{9, kT0};
    const Outcome out = refund(limit, &stored, kT0, 5, 0);
    EXPECT_TRUE(out.allowed);
    EXPECT_DOUBLE_EQ(out.balance, 10);
    EXPECT_DOUBLE_EQ(out.next.value, 10);
    EXPECT_EQ(out.retry_after, 0);
    EXPECT_EQ(out.reset_after, 0);  // full
}

TEST(Refund, AfterRefillNeverAboveCapacity) {
    const Limit limit = TokenBucket(10, 10 * kSec, 10);
    const State stored{0, kT0};
    const Outcome partial = refund(limit, &stored, kT0 + 4 * kSec, 3, 0);  // 0 + 4 refilled + 3
    EXPECT_DOUBLE_EQ(partial.balance, 7);
    EXPECT_EQ(partial.next.ts, kT0 + 4 * kSec);
    const Outcome capped = refund(limit, &stored, kT0 + 8 * kSec, 3, 0);  // 8 + 3 > 10
    EXPECT_DOUBLE_EQ(capped.balance, 10);
    EXPECT_EQ(capped.reset_after, 0);
}

TEST(Refund, IntoDebt) {
    const Limit limit = TokenBucket(10, 10 * kSec, 10);
    const State stored{-5, kT0};
    const Outcome partial = refund(limit, &stored, kT0, 2, 0);
    EXPECT_TRUE(partial.allowed);
    EXPECT_DOUBLE_EQ(partial.balance, -3);
    EXPECT_EQ(partial.retry_after, 3 * kSec);  // still in debt for 3 units
    EXPECT_EQ(partial.reset_after, 13 * kSec);
    EXPECT_EQ(whole_units(limit, partial.balance), 0);

    const Outcome out_of_debt = refund(limit, &stored, kT0, 7, 0);
    EXPECT_DOUBLE_EQ(out_of_debt.balance, 2);
    EXPECT_EQ(out_of_debt.retry_after, 0);
}

TEST(Refund, KeyWithoutRowIsFullAndNeedsNoWrite) {
    const Limit limit = TokenBucket(10, 10 * kSec, 10);
    const Outcome out = refund(limit, nullptr, kT0, 3, 0);
    EXPECT_TRUE(out.allowed);
    EXPECT_FALSE(out.write);
    EXPECT_DOUBLE_EQ(out.balance, 10);
    EXPECT_EQ(out.retry_after, 0);
    EXPECT_EQ(out.reset_after, 0);

    const Limit window = FixedWindow(5, 2 * kMin, 5);
    const Outcome fw = refund(window, nullptr, kT0, 1, 0);
    EXPECT_TRUE(fw.allowed);
    EXPECT_FALSE(fw.write);
    EXPECT_DOUBLE_EQ(fw.balance, 5);
}

TEST(Refund, UndoesARequest) {
    const Limit limit = TokenBucket(10, 10 * kSec, 10);
    const State stored{6, kT0};
    const Outcome taken = request(limit, &stored, kT0, 4, false, 0);
    ASSERT_TRUE(taken.allowed);
    const Outcome back = refund(limit, &taken.next, kT0, 4, 0);
    EXPECT_DOUBLE_EQ(back.balance, 6);
    // The refunded units can be taken again.
    EXPECT_TRUE(request(limit, &back.next, kT0, 6, false, 0).allowed);
}

TEST(Refund, FractionalRefund) {
    const Limit limit = TokenBucket(1, kHour, 1);
    State state{0, kT0};
    for (int k = 0; k < 10; ++k) state = refund(limit, &state, kT0, 0.1, 0).next;
    EXPECT_NEAR(state.value, 1, 1e-12);
    EXPECT_LE(state.value, 1);
    EXPECT_EQ(whole_units(limit, state.value), 1);
    EXPECT_TRUE(request(limit, &state, kT0, 1, false, 0).allowed);
}

TEST(Refund, FixedWindowCountsBoundariesThenRefunds) {
    const Limit limit = FixedWindow(5, 2 * kMin, 12);
    const Micros w = (kT0 / limit.period) * limit.period;
    const State stored{0, w + 1};
    const Outcome same_window = refund(limit, &stored, w + 5 * kSec, 2, 0);
    EXPECT_DOUBLE_EQ(same_window.balance, 2);
    EXPECT_EQ(same_window.next.ts, w + 5 * kSec);
    EXPECT_EQ(same_window.reset_after, 2 * limit.period - 5 * kSec);  // 2 -> 7 -> 12

    const Outcome next_window = refund(limit, &stored, w + limit.period, 2, 0);  // 0 + 5 + 2
    EXPECT_DOUBLE_EQ(next_window.balance, 7);
    // The window already counted is not counted again from the new ts.
    const Outcome again = request(limit, &next_window.next, w + limit.period + 1, 7, false, 0);
    EXPECT_TRUE(again.allowed);
    EXPECT_FALSE(request(limit, &next_window.next, w + limit.period + 1, 8, false, 0).allowed);
}

TEST(Refund, FixedWindowDebtRetryAfter) {
    const Limit limit = FixedWindow(5, 2 * kMin, 5);
    const Micros w = (kT0 / limit.period) * limit.period;
    const State stored{-9, w + 1};
    const Outcome out = refund(limit, &stored, w + 1, 3, 0);
    EXPECT_DOUBLE_EQ(out.balance, -6);
    EXPECT_EQ(out.retry_after, 2 * limit.period - 1);  // -6 -> -1 -> 4
}

TEST(Refund, ClockBackwardsDoesNotMoveTheKeyBack) {
    const Limit limit = TokenBucket(10, 10 * kSec, 10);
    const State stored{0, kT0};
    const Outcome out = refund(limit, &stored, kT0 - kHour, 1, 0);
    EXPECT_DOUBLE_EQ(out.balance, 1);
    EXPECT_EQ(out.next.ts, kT0);
    // Refilling restarts from kT0, not from an hour earlier.
    EXPECT_FALSE(request(limit, &out.next, kT0, 2, false, 0).allowed);
    // Durations are relative to the real now, an hour before the key's time.
    EXPECT_EQ(out.reset_after, kHour + 9 * kSec);
}

}  // namespace
}  // namespace pg_ratelimit::core
