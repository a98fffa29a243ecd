// Sliding window (sliding_window.cpp): on the fixed window's grid, a key has used its current window's
// count plus the previous window's weighted by the part of it still inside the last period; capacity is
// the rate. Covers Cloudflare's worked example, the boundary burst it removes, the continuity of the used
// amount, refunds, exact integer costs under the quantisation of the previous count, the grid, validation
// and retry_after / reset_after at hand-computed points.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "core/algorithms.hpp"
#include "core/validate.hpp"
#include "support.hpp"

namespace pg_ratelimit::core {
namespace {

// The start of the window containing t on the grid origin + k * period.
Micros WindowStart(Micros t, Micros origin, Micros period) {
    const Micros offset = t - origin;
    Micros index = offset / period;
    if (offset % period != 0 && offset < 0) --index;
    return origin + index * period;
}

// Takes unit requests at `now` until one is denied; returns how many were admitted.
int Drain(const Limit &limit, State &state, bool &has_row, Micros now) {
    int admitted = 0;
    for (; admitted < 100000; ++admitted) {
        const Outcome out = Take(limit, has_row ? &state : nullptr, now);
        if (!out.allowed) break;
        state = out.next;
        has_row = true;
    }
    return admitted;
}

// A key that took `previous` units in the window before the one containing `at`, and `current` in it by `at`.
State KeyWith(const Limit &limit, double previous, double current, Micros at) {
    const Micros w = WindowStart(at, limit.start, limit.period);
    State state{};
    if (previous > 0) state = Take(limit, nullptr, w - limit.period, previous).next;
    if (current > 0) state = Take(limit, previous > 0 ? &state : nullptr, at, current).next;
    return state;
}

// Cloudflare's example ("How we built rate limiting capable of scaling to millions of domains"): 50 requests
// per minute, 42 in the previous window, 18 in the current one, 15 s into it. The previous window weighs
// 45 / 60 of its count: 42 * 0.75 + 18 = 49.5 used, so a request of 1 is denied and one of 0.5 fits.
TEST(SlidingWindow, CloudflareExample) {
    const Limit limit = SlidingWindow(50, kMin);
    const Micros w = WindowStart(kT0, 0, kMin);
    State state{};
    bool has_row = false;
    for (int k = 0; k < 42; ++k) {
        const Outcome out = Take(limit, has_row ? &state : nullptr, w - kMin + 10 * kSec);
        ASSERT_TRUE(out.allowed) << k;
        state = out.next;
        has_row = true;
    }
    const Micros now = w + 15 * kSec;
    EXPECT_DOUBLE_EQ(balance_at(limit, &state, now, 0), 50 - 31.5);
    for (int k = 0; k < 18; ++k) {
        const Outcome out = Take(limit, &state, now);
        ASSERT_TRUE(out.allowed) << k;
        state = out.next;
    }
    // Stored: the current window's count, and at ts the previous one's in quanta of 1 / 1199999 units
    // (1199999 = floor((period - 1) / capacity) quanta per unit).
    EXPECT_DOUBLE_EQ(state.value, 18);
    EXPECT_EQ(state.ts, w + Micros{42} * 1199999);
    EXPECT_DOUBLE_EQ(balance_at(limit, &state, now, 0), 0.5);

    const Outcome one = Take(limit, &state, now, 1);
    EXPECT_FALSE(one.allowed);
    EXPECT_DOUBLE_EQ(one.balance, 0.5);
    // 18 + 42 * r / 60 s <= 49 once the remaining time r <= 44285714.28 us, i.e. 714286 us later.
    EXPECT_EQ(one.retry_after, 714286);
    EXPECT_FALSE(Take(limit, &state, now + 714285, 1).allowed);
    EXPECT_TRUE(Take(limit, &state, now + 714286, 1).allowed);
    // Full once the 18 no longer count: the end of the next window.
    EXPECT_EQ(one.reset_after, 2 * kMin - 15 * kSec);

    const Outcome half = Take(limit, &state, now, 0.5);
    EXPECT_TRUE(half.allowed);
    EXPECT_DOUBLE_EQ(half.balance, 0);
    EXPECT_EQ(half.retry_after, 0);
}

// A fixed window admits twice its rate around a boundary (a full window's worth just before it, another
// just after). The sliding window admits rate + rate * d / period in a stretch of length d: the previous
// window's count weighs in full at the boundary and gives back one unit per tenth of the period here.
TEST(SlidingWindow, NoDoubleBurstAroundABoundary) {
    const Limit fixed = FixedWindow(10, 10 * kSec, 10, 0);
    const Limit sliding = SlidingWindow(10, 10 * kSec);
    const Micros boundary = WindowStart(kT0, 0, 10 * kSec) + 10 * kSec;

    State fixed_state{};
    bool fixed_row = false;
    const int fixed_before = Drain(fixed, fixed_state, fixed_row, boundary - 1);
    const int fixed_after = Drain(fixed, fixed_state, fixed_row, boundary);
    EXPECT_EQ(fixed_before + fixed_after, 20);  // in 2 us

    State state{};
    bool has_row = false;
    int admitted = Drain(sliding, state, has_row, boundary - 1);
    EXPECT_EQ(admitted, 10);
    EXPECT_EQ(Drain(sliding, state, has_row, boundary), 0);
    for (int k = 1; k <= 9; ++k) {
        const Micros then = boundary + k * kSec;
        EXPECT_EQ(Drain(sliding, state, has_row, then - 1), 0) << k;
        admitted += Drain(sliding, state, has_row, then);
        // [boundary - 1, then]: d = k s + 1 us.
        EXPECT_EQ(admitted, 10 + k) << k;
        EXPECT_LE(admitted, 10 + 10.0 * static_cast<double>(then - (boundary - 1)) / (10 * kSec)) << k;
    }
}

// The used amount (capacity - balance) never jumps: within a window the previous count drains linearly,
// and at a boundary the current count becomes the previous one at full weight. Each microsecond gives back
// at most capacity / period; the fixed window gives back the whole rate at once.
TEST(SlidingWindow, UsedIsContinuousAcrossABoundary) {
    const Limit limit = SlidingWindow(10, 10 * kSec);
    const Micros w = WindowStart(kT0, 0, limit.period);
    const State state = KeyWith(limit, 6, 3, w + 5 * kSec);
    const double step = limit.capacity / static_cast<double>(limit.period);
    for (const Micros boundary : {w + limit.period, w + 2 * limit.period}) {
        double last = balance_at(limit, &state, boundary - 1000, 0);
        for (Micros t = boundary - 999; t <= boundary + 1000; ++t) {
            const double balance = balance_at(limit, &state, t, 0);
            ASSERT_GE(balance, last) << t - boundary;
            ASSERT_LE(balance - last, step + 1e-12) << t - boundary;
            last = balance;
        }
    }
    // Just before the first boundary 3 + 6 / period are used, at it the 3 of this window at full weight.
    EXPECT_NEAR(balance_at(limit, &state, w + limit.period - 1, 0), 10 - 3 - 6 * step / limit.capacity, 1e-12);
    EXPECT_DOUBLE_EQ(balance_at(limit, &state, w + limit.period, 0), 7);
    EXPECT_DOUBLE_EQ(balance_at(limit, &state, w + 2 * limit.period, 0), 10);

    const Limit fixed = FixedWindow(10, 10 * kSec, 10, 0);
    const State fixed_state = Take(fixed, nullptr, w + 5 * kSec, 9).next;
    EXPECT_DOUBLE_EQ(
        balance_at(fixed, &fixed_state, w + limit.period, 0) - balance_at(fixed, &fixed_state, w + limit.period - 1, 0),
        9);
}

// A refund gives back units of the current window first, then of the previous window's weighted count,
// whose remaining weight shrinks in proportion; the balance never exceeds capacity.
TEST(SlidingWindow, RefundsGiveBackTheCurrentWindowFirst) {
    const Limit limit = SlidingWindow(10, 10 * kSec);  // 999999 quanta per unit
    const Micros w = WindowStart(kT0, 0, limit.period);
    const Micros half = w + 5 * kSec;
    const State state = KeyWith(limit, 6, 3, half);
    EXPECT_DOUBLE_EQ(balance_at(limit, &state, half, 0), 4);  // 3 + 6 * 0.5 used

    const Outcome two = refund(limit, &state, half, 2, 0);
    EXPECT_DOUBLE_EQ(two.balance, 6);
    EXPECT_DOUBLE_EQ(two.next.value, 1);                                     // current 3 - 2
    EXPECT_EQ(two.next.ts, state.ts);                                        // the previous count untouched
    EXPECT_DOUBLE_EQ(balance_at(limit, &two.next, w + 7500 * kMs, 0), 7.5);  // 1 + 6 * 0.25 used

    // 4 back: the current 3, and 1 of the weighted 3 of the previous window, which keeps 2 / 3 of its count.
    const Outcome four = refund(limit, &state, half, 4, 0);
    EXPECT_DOUBLE_EQ(four.balance, 8);
    EXPECT_DOUBLE_EQ(four.next.value, 0);
    EXPECT_EQ(four.next.ts, w + Micros{4} * 999999);
    EXPECT_NEAR(balance_at(limit, &four.next, w + 7500 * kMs, 0), 9, 1e-12);  // 4 * 0.25 used

    // More than everything used: capacity, and nothing counts any more.
    const Outcome all = refund(limit, &state, half, 8, 0);
    EXPECT_DOUBLE_EQ(all.balance, 10);
    EXPECT_EQ(all.next.value, 0);
    EXPECT_EQ(all.next.ts, w);
    EXPECT_EQ(all.reset_after, 0);
    EXPECT_DOUBLE_EQ(balance_at(limit, &all.next, half + 1, 0), 10);
    EXPECT_TRUE(is_full(limit, all.next, half, 0));
}

// With a whole number of quanta per unit, integer (and half) counts of the previous window are exact: rate
// 100 per second keeps it in quanta of 1 / 9999 units. 100 requests are admitted, the 101st is denied;
// half way through the next window exactly 50 more fit, and at the start of the window after it exactly
// 50 again (the 50 of the window before weigh in full).
TEST(SlidingWindow, IntegerCostsAreExact) {
    const Limit limit = SlidingWindow(100, kSec);
    const Micros w = WindowStart(kT0, 0, kSec);
    State state{};
    bool has_row = false;
    EXPECT_EQ(Drain(limit, state, has_row, w + 600 * kMs), 100);
    const Outcome denied = Take(limit, &state, w + 600 * kMs);
    EXPECT_FALSE(denied.allowed);
    // 1 + 100 * r / 1 s <= 100 once r <= 990 ms: 10 ms into the next window.
    EXPECT_EQ(denied.retry_after, 410 * kMs);
    EXPECT_EQ(denied.reset_after, 1400 * kMs);

    EXPECT_EQ(Drain(limit, state, has_row, w + 1500 * kMs), 50);
    EXPECT_EQ(state.ts, w + kSec + Micros{100} * 9999);  // 100 units of the previous window, exactly
    const Outcome next = Take(limit, &state, w + 1500 * kMs);
    EXPECT_FALSE(next.allowed);
    EXPECT_EQ(next.retry_after, 10 * kMs);
    EXPECT_EQ(Drain(limit, state, has_row, w + 2 * kSec), 50);
    EXPECT_EQ(whole_units(limit, balance_at(limit, &state, w + 2 * kSec, 0)), 0);
}

// Below one quantum per unit (capacity above period - 1 us) a quantum is several units; the previous count
// is rounded up to one, so the rounding makes a key poorer, never richer, and by at most one quantum.
TEST(SlidingWindow, CoarseQuantaRoundTowardsLess) {
    const Limit limit = SlidingWindow(1e6, MIN_SLIDING_PERIOD);  // a quantum is 1e6 / 999 units
    ASSERT_EQ(validate_limit(limit), LimitProblem::none);
    const double quantum = 1e6 / 999;
    const Micros w = WindowStart(kT0, 0, limit.period);
    const State previous = Take(limit, nullptr, w - 1, 1).next;  // 1 unit in the previous window
    const Micros half = w + limit.period / 2;
    const Outcome out = Take(limit, &previous, half, 1);
    ASSERT_TRUE(out.allowed);
    EXPECT_DOUBLE_EQ(out.balance, 1e6 - 1 - 0.5);
    const double back = balance_at(limit, &out.next, half, 0);
    EXPECT_LE(back, out.balance);
    EXPECT_GE(back, out.balance - quantum);
    EXPECT_NEAR(back, 1e6 - 1 - quantum * 0.5, 1e-6);
}

// An admitted request that leaves no debt reports no wait (algorithms.hpp), although the previous count is
// stored rounded up to a quantum: 0.1234567 units of the previous window are kept as 123457 quanta of
// 1 / 999999, and the request that took exactly the balance read back 2e-7 units in debt, so retry_after
// came out as 18 us.
TEST(SlidingWindow, AllowedWithoutDebtWaitsNothing) {
    const Limit limit = SlidingWindow(10, 10 * kSec);
    const Micros w = WindowStart(kT0, 0, limit.period);
    const State previous = Take(limit, nullptr, w - 5 * kSec, 0.1234567).next;
    const Micros now = w + 5 * kSec;
    const double balance = balance_at(limit, &previous, now, 0);
    const Outcome all = Take(limit, &previous, now, balance);
    ASSERT_TRUE(all.allowed);
    EXPECT_EQ(all.balance, 0);
    EXPECT_EQ(all.retry_after, 0);
    // What is stored reads back never more than the balance, and at most one quantum less.
    const double back = balance_at(limit, &all.next, now, 0);
    EXPECT_LE(back, 0);
    EXPECT_GE(back, -1.0 / 999999);
}

// start anchors the grid for every key; without start each key's grid is offset by its hash.
TEST(SlidingWindow, StartAnchorsTheGrid) {
    const Micros start = kT0 + 123456;
    const Limit limit = SlidingWindow(10, 10 * kSec, start);
    EXPECT_EQ(window_origin(limit, 0xfeedULL), start);
    EXPECT_EQ(key_origin(limit, "user:42", std::strlen("user:42")), start);
    // Ten units in the last microsecond of a window: at the boundary they weigh in full.
    const Micros boundary = start + 10 * limit.period;
    const State full = KeyWith(limit, 0, 10, boundary - 1);
    const Outcome denied = request(limit, &full, boundary - 1, 1, false, start);
    EXPECT_FALSE(denied.allowed);
    EXPECT_EQ(denied.retry_after, 1 + kSec);  // one tenth into the next window
    // The same requests on a grid shifted by half a period: the units are taken mid-window, and the next
    // window starts 5 s later.
    const Micros shifted = start + 5 * kSec;
    const Outcome taken = request(limit, nullptr, boundary - 1, 10, false, shifted);
    ASSERT_TRUE(taken.allowed);
    const Outcome other = request(limit, &taken.next, boundary - 1, 1, false, shifted);
    EXPECT_FALSE(other.allowed);
    EXPECT_EQ(other.retry_after, 1 + 5 * kSec + kSec);
}

TEST(SlidingWindow, PerKeyOffsetWithoutStart) {
    const Limit limit = SlidingWindowPerKey(10, 10 * kSec);
    for (const char *key : {"", "a", "user:42", "tenant/7/api"}) {
        const std::size_t size = std::strlen(key);
        const Micros origin = key_origin(limit, key, size);
        EXPECT_EQ(origin, static_cast<Micros>(key_hash(key, size) % static_cast<std::uint64_t>(limit.period))) << key;
        EXPECT_EQ(origin, window_origin(limit, key_hash(key, size))) << key;
        // The key's windows end where its grid says: ten units at the last microsecond of one of its windows
        // are denied one more until a tenth of the next window has passed.
        const Micros boundary = WindowStart(kT0, origin, limit.period) + limit.period;
        const Outcome full = request(limit, nullptr, boundary - 1, 10, false, origin);
        ASSERT_TRUE(full.allowed) << key;
        const Outcome denied = request(limit, &full.next, boundary - 1, 1, false, origin);
        EXPECT_FALSE(denied.allowed) << key;
        EXPECT_EQ(denied.retry_after, 1 + kSec) << key;
    }
    EXPECT_NE(key_origin(limit, "a", 1), key_origin(limit, "b", 1));
}

TEST(SlidingWindow, Validation) {
    EXPECT_EQ(validate_limit(SlidingWindow(10, kMin)), LimitProblem::none);
    EXPECT_EQ(validate_limit(SlidingWindowPerKey(10, kMin)), LimitProblem::none);
    Limit capacity = SlidingWindow(10, kMin);
    for (const double c : {9.0, 11.0, std::nextafter(10.0, 11.0)}) {
        capacity.capacity = c;
        EXPECT_EQ(validate_limit(capacity), LimitProblem::sliding_capacity) << c;
    }
    Limit reservations = SlidingWindow(10, kMin);
    for (const double r : {1.0, 1e-9, kInf}) {
        reservations.max_reserved = r;
        EXPECT_EQ(validate_limit(reservations), LimitProblem::sliding_reservations) << r;
    }
    reservations.max_reserved = -0.0;
    EXPECT_EQ(validate_limit(reservations), LimitProblem::none);
    Limit period = SlidingWindow(10, MIN_SLIDING_PERIOD);
    EXPECT_EQ(validate_limit(period), LimitProblem::none);
    for (const Micros p : {MIN_SLIDING_PERIOD - 1, Micros{1}}) {
        period.period = p;
        EXPECT_EQ(validate_limit(period), LimitProblem::sliding_period) << p;
    }
    EXPECT_EQ(MIN_SLIDING_PERIOD, 1000);
    // The general bounds still come first.
    period.period = 0;
    EXPECT_EQ(validate_limit(period), LimitProblem::period);
    Limit far = SlidingWindow(10, kMin, MAX_START_OFFSET + 1);
    EXPECT_EQ(validate_limit(far), LimitProblem::start_out_of_range);
    EXPECT_TRUE(uses_window_grid(Algorithm::sliding_window));
}

// Hand-computed waits: a full current window (10 of 10 taken 2 s into a 10 s window) keeps the key empty
// until a tenth of the next window has passed, and full once the window after it starts.
TEST(SlidingWindow, RetryAfterAndResetAfterAtHandComputedPoints) {
    const Limit limit = SlidingWindow(10, 10 * kSec);
    const Micros w = WindowStart(kT0, 0, limit.period);
    const State state = KeyWith(limit, 0, 10, w + 2 * kSec);
    const Outcome one = Take(limit, &state, w + 5 * kSec, 1);
    EXPECT_FALSE(one.allowed);
    EXPECT_EQ(one.retry_after, 6 * kSec);   // 1 + 10 * 9 s / 10 s = 10 at w + 11 s
    EXPECT_EQ(one.reset_after, 15 * kSec);  // at w + 20 s nothing counts; 1 us before, 10 * 1 / 10^7
    EXPECT_FALSE(Take(limit, &state, w + 11 * kSec - 1, 1).allowed);
    EXPECT_TRUE(Take(limit, &state, w + 11 * kSec, 1).allowed);
    EXPECT_FALSE(is_full(limit, state, w + 20 * kSec - 1, 0));
    EXPECT_TRUE(is_full(limit, state, w + 20 * kSec, 0));

    const Outcome four = Take(limit, &state, w + 5 * kSec, 4);
    EXPECT_EQ(four.retry_after, 9 * kSec);  // 4 fit 4 s into the next window

    // The whole capacity needs the previous count gone: the next window but one.
    const Outcome all = Take(limit, &state, w + 5 * kSec, 10);
    EXPECT_EQ(all.retry_after, 15 * kSec);
}

// A clock stepped back into an earlier window evaluates the key at the start of its stored window (the
// previous count weighs in full); stepped back within the window, at the earlier instant, where the previous
// count weighs more. Either way the key holds less, never more.
TEST(SlidingWindow, ClockSteppedBackHoldsLess) {
    const Limit limit = SlidingWindow(10, 10 * kSec);
    const Micros w = WindowStart(kT0, 0, limit.period);
    const State state = KeyWith(limit, 6, 3, w + 5 * kSec);
    EXPECT_DOUBLE_EQ(balance_at(limit, &state, w + 5 * kSec, 0), 4);
    EXPECT_DOUBLE_EQ(balance_at(limit, &state, w + 2500 * kMs, 0), 2.5);  // 3 + 6 * 0.75
    EXPECT_DOUBLE_EQ(balance_at(limit, &state, w - 5 * kSec, 0), 1);      // 3 + 6 at w
    EXPECT_DOUBLE_EQ(balance_at(limit, &state, w - 3 * kYear, 0), 1);
    const Outcome out = Take(limit, &state, w - 5 * kSec, 1);
    EXPECT_TRUE(out.allowed);
    EXPECT_DOUBLE_EQ(out.balance, 0);
    EXPECT_EQ(out.next.ts, state.ts);  // still the key's window, the same previous count
    EXPECT_FALSE(is_full(limit, state, w - 5 * kSec, 0));
    // Waits count from the real now: the key (4 + 6 used at w) has a unit back once 4 + 6 * r / 10 s <= 9,
    // r <= 8333333 us, i.e. at w + 1666667 us.
    const Outcome denied = Take(limit, &out.next, w - 5 * kSec, 1);
    EXPECT_FALSE(denied.allowed);
    EXPECT_EQ(denied.retry_after, 5 * kSec + 1666667);
}

}  // namespace
}  // namespace pg_ratelimit::core
