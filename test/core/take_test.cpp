// take(): the extra cost of work already done (rate_limit_settle). Always allowed, into debt beyond
// max_reserved if it must (never below -MAX_UNITS), a sliding window down to 0 at most; retry_after is
// until the key is out of debt.
#include <gtest/gtest.h>

#include "core/algorithms.hpp"
#include "support.hpp"

namespace pg_ratelimit::core {
namespace {

TEST(Take, FromAvailableUnits) {
    const Limit limit = TokenBucket(10, 10 * kSec, 10);
    const State stored{6, kT0};
    const Outcome out = take(limit, &stored, kT0, 4, 0);
    EXPECT_TRUE(out.allowed);
    EXPECT_TRUE(out.write);
    EXPECT_DOUBLE_EQ(out.balance, 2);
    EXPECT_DOUBLE_EQ(out.next.value, 2);
    EXPECT_EQ(out.retry_after, 0);
    EXPECT_EQ(out.reset_after, 8 * kSec);
}

TEST(Take, IntoDebtBeyondMaxReserved) {
    const Limit limit = TokenBucket(10, 10 * kSec, 10, /*max_reserved=*/2);
    const State stored{1, kT0};
    const Outcome out = take(limit, &stored, kT0, 6, 0);  // a request with reserve would be denied
    EXPECT_FALSE(request(limit, &stored, kT0, 6, true, 0).allowed);
    EXPECT_TRUE(out.allowed);
    EXPECT_DOUBLE_EQ(out.balance, -5);
    EXPECT_EQ(out.retry_after, 5 * kSec);   // out of debt after 5 units of refill
    EXPECT_EQ(out.reset_after, 15 * kSec);  // full after 15
    EXPECT_EQ(whole_units(limit, out.balance), 0);
    // Later requests queue behind the debt.
    EXPECT_FALSE(request(limit, &out.next, kT0 + 5 * kSec, 1, false, 0).allowed);
    EXPECT_TRUE(request(limit, &out.next, kT0 + 6 * kSec, 1, false, 0).allowed);
}

TEST(Take, KeyWithoutRowIsFullThenTaken) {
    const Limit limit = TokenBucket(10, 10 * kSec, 10);
    const Outcome out = take(limit, nullptr, kT0, 25, 0);
    EXPECT_TRUE(out.write);
    EXPECT_DOUBLE_EQ(out.balance, -15);
    EXPECT_EQ(out.retry_after, 15 * kSec);
}

TEST(Take, NothingWritesNothing) {
    const Limit limit = TokenBucket(10, 10 * kSec, 10);
    const Outcome absent = take(limit, nullptr, kT0, 0, 0);
    EXPECT_FALSE(absent.write);
    EXPECT_DOUBLE_EQ(absent.balance, 10);
    EXPECT_EQ(absent.reset_after, 0);
    const State stored{-3, kT0};
    const Outcome debt = take(limit, &stored, kT0 + kSec, 0, 0);
    EXPECT_FALSE(debt.write);
    EXPECT_DOUBLE_EQ(debt.balance, -2);
    EXPECT_EQ(debt.retry_after, 2 * kSec);
}

TEST(Take, DebtBoundedByMaxUnits) {
    const Limit limit = TokenBucket(1e12, kSec, 1e12);
    const State stored{-0.9e12, kT0};
    const Outcome out = take(limit, &stored, kT0, 1e12, 0);
    EXPECT_DOUBLE_EQ(out.balance, -MAX_UNITS);
    // Already at the bound: taking more changes nothing.
    const Outcome again = take(limit, &out.next, kT0, 5, 0);
    EXPECT_DOUBLE_EQ(again.balance, -MAX_UNITS);
}

TEST(Take, SlidingWindowDownToZeroAtMost) {
    const Limit limit = SlidingWindow(10, 10 * kSec);
    const Outcome first = take(limit, nullptr, kT0, 4, 0);
    EXPECT_DOUBLE_EQ(first.balance, 6);
    const Outcome second = take(limit, &first.next, kT0, 50, 0);
    EXPECT_TRUE(second.allowed);
    EXPECT_DOUBLE_EQ(second.balance, 0);
    EXPECT_NEAR(balance_at(limit, &second.next, kT0, 0), 0, 1e-9);
    EXPECT_EQ(second.retry_after, 0);
}

// Every algorithm: a take of c from a balance b leaves b - c (where debt is possible), the same as a
// reservation with unlimited max_reserved would.
TEST(Take, AgreesWithUnlimitedReservation) {
    for (const Algorithm algorithm : {Algorithm::token_bucket, Algorithm::fixed_window, Algorithm::gcra}) {
        SCOPED_TRACE(AlgorithmName(algorithm));
        Limit limit =
            algorithm == Algorithm::gcra ? Gcra(10, 10 * kSec, 10, kInf) : Make(algorithm, 10, 10 * kSec, 10, kInf);
        const Outcome reserved = request(limit, nullptr, kT0, 7, false, 0);
        const Outcome taken = take(limit, &reserved.next, kT0 + kSec, 9, 0);
        const Outcome expected = request(limit, &reserved.next, kT0 + kSec, 9, true, 0);
        ASSERT_TRUE(expected.allowed);
        EXPECT_DOUBLE_EQ(taken.balance, expected.balance);
        EXPECT_EQ(taken.retry_after, expected.retry_after);
        EXPECT_EQ(taken.reset_after, expected.reset_after);
        EXPECT_LT(taken.balance, 0);
    }
}

}  // namespace
}  // namespace pg_ratelimit::core
