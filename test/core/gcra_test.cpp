// GCRA (gcra.cpp): the token bucket's balances stored as the theoretical arrival time (TAT). On the same
// requests it decides as a token bucket of the same rate, capacity and max_reserved; its stored ts is the
// TAT (its fraction of a microsecond in value); the redis-cell example; and a clock stepped back makes a key
// poorer than the token bucket's, never richer.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>

#include "core/algorithms.hpp"
#include "core/validate.hpp"
#include "random_limits.hpp"
#include "support.hpp"

namespace pg_ratelimit::core {
namespace {

// A key under two limits that differ only in their algorithm, driven by the same calls.
struct Twins {
    Limit bucket;
    Limit gcra;
    State bucket_state{};
    State gcra_state{};
    bool has_row = false;

    explicit Twins(const Limit &limit) : bucket(limit), gcra(limit) {
        bucket.algorithm = Algorithm::token_bucket;
        gcra.algorithm = Algorithm::gcra;
    }
    [[nodiscard]] const State *BucketRow() const { return has_row ? &bucket_state : nullptr; }
    [[nodiscard]] const State *GcraRow() const { return has_row ? &gcra_state : nullptr; }
};

// The two outcomes agree: same decision, same whole units, waits within 1 us, balances equal to rounding
// (each key accumulates its own float rounding over a stream: far below a billionth of the figures). Not
// compared: whether a row is written, since the encodings differ (a full GCRA key whose TAT is now already
// stores what a refund would write, where the token bucket's row moves its ts to now).
::testing::AssertionResult Agree(const Limit &limit, const Outcome &bucket, const Outcome &gcra) {
    const double rounding = 1e-9 * (std::fabs(bucket.balance) + limit.capacity);
    if (bucket.allowed == gcra.allowed && whole_units(limit, bucket.balance) == whole_units(limit, gcra.balance) &&
        std::fabs(bucket.balance - gcra.balance) <= rounding &&
        std::llabs(bucket.retry_after - gcra.retry_after) <= 1 &&
        std::llabs(bucket.reset_after - gcra.reset_after) <= 1) {
        return ::testing::AssertionSuccess();
    }
    return ::testing::AssertionFailure() << "token bucket: allowed=" << bucket.allowed << " write=" << bucket.write
                                         << " balance=" << bucket.balance << " retry_after=" << bucket.retry_after
                                         << " reset_after=" << bucket.reset_after << "; gcra: allowed=" << gcra.allowed
                                         << " write=" << gcra.write << " balance=" << gcra.balance
                                         << " retry_after=" << gcra.retry_after << " reset_after=" << gcra.reset_after;
}

TEST(Gcra, SameDecisionsAsATokenBucket) {
    Random random(0x6c7a0001);
    int allowed = 0;
    int denied = 0;
    int in_debt = 0;
    for (int trial = 0; trial < 300; ++trial) {
        const Keyed s = RandomLimit(random, Algorithm::token_bucket, /*allow_unlimited=*/true);
        Twins twins(s.limit);
        const Limit &l = twins.gcra;
        const double unit_cost = RandomCost(random, l);
        const double refill_one = unit_cost / l.rate * static_cast<double>(l.period);
        const Micros mean_gap = static_cast<Micros>(std::min(refill_one * random.LogUniform(0.2, 2), 1e12));
        Micros now = kT0 + random.Int(0, kDay);
        for (int i = 0; i < 1000; ++i) {
            if (i > 0 && !random.Chance(0.3)) now += random.Int(0, 2 * mean_gap);
            const double cost = random.Chance(0.7) ? unit_cost : RandomCost(random, l);
            const bool give_back = random.Chance(0.1);
            const bool reserve = l.max_reserved > 0 && random.Chance(0.3);
            Outcome bucket;
            Outcome gcra;
            if (give_back) {
                bucket = refund(twins.bucket, twins.BucketRow(), now, cost, 0);
                gcra = refund(twins.gcra, twins.GcraRow(), now, cost, 0);
            } else {
                bucket = request(twins.bucket, twins.BucketRow(), now, cost, reserve, 0);
                gcra = request(twins.gcra, twins.GcraRow(), now, cost, reserve, 0);
                (bucket.allowed ? allowed : denied) += 1;
                if (bucket.allowed && bucket.balance < -tolerance(l)) ++in_debt;
            }
            const ::testing::AssertionResult agree = Agree(l, bucket, gcra);
            ASSERT_TRUE(agree) << "trial " << trial << " call " << i << " now=" << now << " cost=" << cost
                               << " refund=" << give_back << " reserve=" << reserve << ": " << Describe(l, 0);
            // What the glue stores: an admitted request's state; a refund's only over an existing row (a key
            // without one is full). Storing next when write is false changes nothing.
            if (bucket.allowed && (twins.has_row || !give_back)) {
                twins.bucket_state = bucket.next;
                twins.gcra_state = gcra.next;
                twins.has_row = true;
            }
        }
    }
    // Both branches and reservations were exercised.
    EXPECT_GT(allowed, 50000);
    EXPECT_GT(denied, 50000);
    EXPECT_GT(in_debt, 5000);
}

// A fresh key after one request of cost c at now: TAT = now + c * period / rate, stored as its whole
// microseconds in ts and the fraction beyond in value; full again at the TAT (rounded up).
TEST(Gcra, StoresTheTheoreticalArrivalTime) {
    const Limit limit = Gcra(7, 333 * kSec, 10);  // one unit per 47571428.571428... us
    const double interval = 333.0 * kSec / 7;
    const Outcome first = Take(limit, nullptr, kT0, 1);
    ASSERT_TRUE(first.allowed);
    EXPECT_EQ(first.next.ts, kT0 + 47571428);
    EXPECT_NEAR(first.next.value, interval - 47571428, 1e-6);  // 4/7 us
    EXPECT_GE(first.next.value, 0);
    EXPECT_LT(first.next.value, 1);
    EXPECT_NEAR(first.balance, 9, 1e-12);
    EXPECT_EQ(first.reset_after, 47571429);  // the TAT, rounded up to the microsecond

    // A second unit at the same instant: the TAT moves one more interval.
    const Outcome second = Take(limit, &first.next, kT0, 1);
    ASSERT_TRUE(second.allowed);
    EXPECT_EQ(second.next.ts, kT0 + 95142857);
    EXPECT_NEAR(second.next.value, 2 * interval - 95142857, 1e-6);  // 1/7 us

    // Long after the TAT the key is full: the next TAT counts from now.
    const Micros later = kT0 + kHour;
    const Outcome idle = Take(limit, &second.next, later, 2);
    ASSERT_TRUE(idle.allowed);
    EXPECT_NEAR(idle.balance, 8, 1e-12);
    EXPECT_EQ(idle.next.ts, later + 95142857);

    // Whole microseconds: no fraction.
    const Limit even = Gcra(30, kMin, 16);  // one unit per 2 s
    const Outcome three = Take(even, nullptr, kT0, 3);
    ASSERT_TRUE(three.allowed);
    EXPECT_EQ(three.next.ts, kT0 + 6 * kSec);
    EXPECT_EQ(three.next.value, 0);
    EXPECT_EQ(three.reset_after, 6 * kSec);
}

// A refund back to capacity stores a TAT of now: full, nothing owed.
TEST(Gcra, RefundToCapacityStoresNow) {
    const Limit limit = Gcra(30, kMin, 16);
    const Outcome taken = Take(limit, nullptr, kT0, 1);
    ASSERT_TRUE(taken.allowed);
    const Outcome back = refund(limit, &taken.next, kT0 + kSec, 5, 0);
    EXPECT_DOUBLE_EQ(back.balance, 16);
    EXPECT_EQ(back.next.ts, kT0 + kSec);
    EXPECT_EQ(back.next.value, 0);
    EXPECT_EQ(back.reset_after, 0);
    EXPECT_TRUE(is_full(limit, back.next, kT0 + kSec, 0));
}

// redis-cell's example: CL.THROTTLE user123 15 30 60 (max_burst 15, 30 per 60 s) is capacity 16: sixteen
// requests at once are allowed, remaining 15 down to 0, and the seventeenth is denied until one emission
// interval (2 s) has passed.
TEST(Gcra, RedisCellExample) {
    const Limit limit = Gcra(30, kMin, 15 + 1);
    ASSERT_EQ(validate_limit(limit), LimitProblem::none);
    State state{};
    const State *stored = nullptr;
    for (int k = 1; k <= 16; ++k) {
        const Outcome out = Take(limit, stored, kT0);
        ASSERT_TRUE(out.allowed) << k;
        EXPECT_EQ(whole_units(limit, out.balance), 16 - k) << k;
        EXPECT_EQ(out.retry_after, 0) << k;
        EXPECT_EQ(out.reset_after, Micros{k} * 2 * kSec) << k;
        state = out.next;
        stored = &state;
    }
    const Outcome denied = Take(limit, stored, kT0);
    EXPECT_FALSE(denied.allowed);
    EXPECT_FALSE(denied.write);
    EXPECT_EQ(whole_units(limit, denied.balance), 0);
    EXPECT_EQ(denied.retry_after, 2 * kSec);
    EXPECT_EQ(denied.reset_after, 32 * kSec);
    EXPECT_FALSE(Take(limit, stored, kT0 + 2 * kSec - 1).allowed);
    const Outcome retried = Take(limit, stored, kT0 + 2 * kSec);
    EXPECT_TRUE(retried.allowed);
    EXPECT_EQ(whole_units(limit, retried.balance), 0);
}

// A clock stepped back: the token bucket holds a key still at its stored instant, GCRA evaluates it at the
// earlier now, where its TAT is further away: it holds less.
TEST(Gcra, ClockSteppedBackHoldsLessThanTheTokenBucket) {
    Twins twins(TokenBucket(10, 10 * kSec, 10));  // one unit per second
    for (int k = 0; k < 5; ++k) {
        const Outcome bucket = Take(twins.bucket, twins.BucketRow(), kT0);
        const Outcome gcra = Take(twins.gcra, twins.GcraRow(), kT0);
        ASSERT_TRUE(bucket.allowed && gcra.allowed);
        twins.bucket_state = bucket.next;
        twins.gcra_state = gcra.next;
        twins.has_row = true;
    }
    EXPECT_EQ(twins.gcra_state.ts, kT0 + 5 * kSec);
    const Micros back = kT0 - 3 * kSec;
    EXPECT_DOUBLE_EQ(balance_at(twins.bucket, twins.BucketRow(), back, 0), 5);
    EXPECT_DOUBLE_EQ(balance_at(twins.gcra, twins.GcraRow(), back, 0), 2);  // TAT 8 s away
    const Outcome bucket = Take(twins.bucket, twins.BucketRow(), back, 3);
    const Outcome gcra = Take(twins.gcra, twins.GcraRow(), back, 3);
    EXPECT_TRUE(bucket.allowed);
    EXPECT_FALSE(gcra.allowed);
    EXPECT_EQ(gcra.retry_after, kSec);  // 3 units once the TAT is 7 s away
    // A GCRA row behind the clock is never deletable (is_full), and it is never full before its TAT.
    EXPECT_FALSE(is_full(twins.gcra, twins.gcra_state, back, 0));
    EXPECT_FALSE(is_full(twins.gcra, twins.gcra_state, kT0 + 5 * kSec - 1, 0));
    EXPECT_TRUE(is_full(twins.gcra, twins.gcra_state, kT0 + 5 * kSec, 0));
}

// Random streams with a clock that often steps back: at every point GCRA has admitted no more units than the
// token bucket given the same calls, and both stay within capacity + max_reserved + the refill up to the
// latest clock reading.
TEST(Gcra, ClockSteppedBackNeverAdmitsMoreThanTheTokenBucket) {
    Random random(0x6c7a0002);
    int behind = 0;
    for (int trial = 0; trial < 300; ++trial) {
        const Keyed s = RandomLimit(random, Algorithm::token_bucket, /*allow_unlimited=*/false);
        Twins twins(s.limit);
        const Limit &l = twins.gcra;
        const double cost = RandomCost(random, l);
        const double refill_one = cost / l.rate * static_cast<double>(l.period);
        const Micros mean_gap = static_cast<Micros>(std::min(refill_one * random.LogUniform(0.2, 2), 1e12));
        const Micros first = kT0 + random.Int(0, kDay);
        Micros now = first;
        Micros latest = first;
        State bucket_state{};
        State gcra_state{};
        const State *bucket_row = nullptr;
        const State *gcra_row = nullptr;
        long double bucket_admitted = 0;
        long double gcra_admitted = 0;
        const long double slack = 2 * tolerance(l) + 1e-9 * (l.capacity + l.max_reserved);
        for (int i = 0; i < 2000; ++i) {
            if (i > 0) now = NextInstant(random, now, mean_gap, l.period);
            if (now < latest) ++behind;
            latest = std::max(latest, now);
            const bool reserve = l.max_reserved > 0 && random.Chance(0.3);
            const Outcome bucket = request(twins.bucket, bucket_row, now, cost, reserve, 0);
            const Outcome gcra = request(twins.gcra, gcra_row, now, cost, reserve, 0);
            if (bucket.allowed) {
                bucket_admitted += cost;
                bucket_state = bucket.next;
                bucket_row = &bucket_state;
            }
            if (gcra.allowed) {
                gcra_admitted += cost;
                gcra_state = gcra.next;
                gcra_row = &gcra_state;
            }
            ASSERT_LE(gcra_admitted, bucket_admitted + slack)
                << "trial " << trial << " call " << i << ": " << Describe(l, 0) << " cost=" << cost;
        }
        const long double refill = static_cast<long double>(l.rate) * (latest - first) / l.period;
        EXPECT_LE(gcra_admitted, l.capacity + l.max_reserved + refill + slack) << Describe(l, 0);
    }
    EXPECT_GT(behind, 50000);  // the clock was behind its latest reading that often
}

// An admitted request that leaves no debt reports no wait (algorithms.hpp), whatever the TAT encoding reads
// back: with a fill time of 143 years a microsecond of refill is below the float resolution of the
// capacity, and the request for the whole capacity read back 2e-15 units short of zero, below -tolerance,
// so retry_after came out as 1 us.
TEST(Gcra, AllowedWithoutDebtWaitsNothing) {
    const Limit limit = Gcra(0.7, Micros{10} * 366 * kDay, 10);
    const Outcome all = Take(limit, nullptr, kT0, 10);
    ASSERT_TRUE(all.allowed);
    EXPECT_GE(all.balance, -tolerance(limit));
    EXPECT_EQ(all.retry_after, 0);
    const Outcome bucket = Take(TokenBucket(0.7, Micros{10} * 366 * kDay, 10), nullptr, kT0, 10);
    EXPECT_EQ(bucket.retry_after, 0);
    EXPECT_LE(std::llabs(all.reset_after - bucket.reset_after), 1);
}

// GCRA has no window grid: start is refused, and keys have no offset.
TEST(Gcra, NoWindowGrid) {
    Limit limit = Gcra(30, kMin, 16);
    EXPECT_FALSE(uses_window_grid(Algorithm::gcra));
    EXPECT_EQ(window_origin(limit, 0x123456789abcdefULL), 0);
    EXPECT_EQ(key_origin(limit, "user:42", std::strlen("user:42")), 0);
    limit.has_start = true;
    limit.start = kT0;
    EXPECT_EQ(validate_limit(limit), LimitProblem::start_needs_window);
}

}  // namespace
}  // namespace pg_ratelimit::core
