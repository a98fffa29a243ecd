// Fixed window: windows start at origin + k * period (origin = the limit's start, or key_hash % period),
// each boundary crossed since the stored ts adds rate, capped at capacity. Covers the grid, boundaries on
// the exact microsecond, negative (t - origin), and the article example.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "core/algorithms.hpp"
#include "support.hpp"

namespace pg_ratelimit::core {
namespace {

std::uint64_t Hash(const char *text) { return key_hash(text, std::strlen(text)); }

// The start of the window containing t on the grid origin + k * period.
Micros WindowStart(Micros t, Micros origin, Micros period) {
    Micros offset = t - origin;
    Micros index = offset / period;
    if (offset % period != 0 && offset < 0) --index;
    return origin + index * period;
}

TEST(KeyHash, IsFnv1a64) {
    EXPECT_EQ(key_hash("", 0), 0xcbf29ce484222325ULL);
    EXPECT_EQ(Hash("a"), 0xaf63dc4c8601ec8cULL);
    EXPECT_EQ(Hash("foobar"), 0x85944171f73967e8ULL);
    EXPECT_EQ(Hash("user:42"), 0x6c151ea4dcd221c2ULL);
}

TEST(KeyHash, CoversEveryByteIncludingNulAndHighBytes) {
    const char a[] = {'k', '\0', 'x'};
    const char b[] = {'k', '\0', 'y'};
    EXPECT_NE(key_hash(a, 3), key_hash(b, 3));
    EXPECT_NE(key_hash(a, 3), key_hash(a, 1));
    const char high[] = {static_cast<char>(0xff)};
    // FNV-1a of the single byte 0xff: bytes are unsigned.
    EXPECT_EQ(key_hash(high, 1), (0xcbf29ce484222325ULL ^ 0xffULL) * 1099511628211ULL);
}

TEST(WindowOrigin, UsesTheLimitStart) {
    const Limit limit = FixedWindow(5, 2 * kMin, 5, 12345);
    EXPECT_EQ(window_origin(limit, Hash("anything")), 12345);
    const Limit negative = FixedWindow(5, 2 * kMin, 5, -7 * kYear);
    EXPECT_EQ(window_origin(negative, Hash("anything")), -7 * kYear);
}

TEST(WindowOrigin, WithoutStartIsKeyHashModuloPeriod) {
    const Limit limit = FixedWindowPerKey(5, 2 * kMin, 5);
    for (const char *key : {"", "a", "user:42", "tenant/7/api"}) {
        const std::uint64_t hash = Hash(key);
        const Micros origin = window_origin(limit, hash);
        EXPECT_EQ(origin, static_cast<Micros>(hash % static_cast<std::uint64_t>(limit.period))) << key;
        EXPECT_GE(origin, 0) << key;
        EXPECT_LT(origin, limit.period) << key;
    }
    // A hash above INT64_MAX still gives an offset inside [0, period).
    const Micros origin = window_origin(limit, ~std::uint64_t{0});
    EXPECT_GE(origin, 0);
    EXPECT_LT(origin, limit.period);
}

TEST(FixedWindow, KeyWithoutRowIsFull) {
    const Limit limit = FixedWindow(5, 2 * kMin, 5, 0);
    const Micros w = WindowStart(kT0, 0, limit.period);
    const Outcome out = Take(limit, nullptr, w + 30 * kSec, 2);
    EXPECT_TRUE(out.allowed);
    EXPECT_TRUE(out.write);
    EXPECT_DOUBLE_EQ(out.balance, 3);
    EXPECT_DOUBLE_EQ(out.next.value, 3);
    EXPECT_EQ(out.next.ts, w + 30 * kSec);
    EXPECT_EQ(out.retry_after, 0);
    EXPECT_EQ(out.reset_after, 90 * kSec);  // the next window start refills
}

// Article example 5: rate 5 per 2 minutes. Five requests are allowed in a window, the sixth is denied
// until the next window starts.
TEST(FixedWindowArticles, FivePerTwoMinutes) {
    const Limit limit = FixedWindow(5, 2 * kMin, 5, 0);
    const Micros w = WindowStart(kT0, 0, limit.period);
    State state{};
    const State *stored = nullptr;
    for (int k = 0; k < 5; ++k) {
        const Outcome out = Take(limit, stored, w + (10 + 10 * k) * kSec);
        ASSERT_TRUE(out.allowed) << "request " << k;
        EXPECT_DOUBLE_EQ(out.balance, 4 - k);  // no refill inside a window
        state = out.next;
        stored = &state;
    }
    const Micros now = w + 100 * kSec;
    const Outcome sixth = Take(limit, stored, now);
    EXPECT_FALSE(sixth.allowed);
    EXPECT_FALSE(sixth.write);
    EXPECT_DOUBLE_EQ(sixth.balance, 0);
    EXPECT_EQ(sixth.retry_after, 20 * kSec);
    EXPECT_EQ(sixth.reset_after, 20 * kSec);

    const Outcome last_microsecond = Take(limit, stored, w + 2 * kMin - 1);
    EXPECT_FALSE(last_microsecond.allowed);
    EXPECT_EQ(last_microsecond.retry_after, 1);
    const Outcome next_window = Take(limit, stored, w + 2 * kMin);
    EXPECT_TRUE(next_window.allowed);
    EXPECT_DOUBLE_EQ(next_window.balance, 4);
}

TEST(FixedWindow, BoundaryIsTheExactMicrosecond) {
    const Limit limit = FixedWindow(5, 2 * kMin, 5, 0);
    const Micros w = WindowStart(kT0, 0, limit.period);
    for (const Micros written : {w, w + 1, w + kMin, w + limit.period - 1}) {
        const State stored{0, written};
        const Outcome before = Take(limit, &stored, w + limit.period - 1);
        EXPECT_FALSE(before.allowed) << written - w;
        EXPECT_EQ(before.retry_after, 1) << written - w;
        const Outcome at = Take(limit, &stored, w + limit.period);
        EXPECT_TRUE(at.allowed) << written - w;
        EXPECT_DOUBLE_EQ(at.balance, 4) << written - w;
    }
}

TEST(FixedWindow, NoRefillInsideAWindow) {
    const Limit limit = FixedWindow(5, 2 * kMin, 5, 0);
    const Micros w = WindowStart(kT0, 0, limit.period);
    const State stored{2, w + 1};
    const Outcome out = Take(limit, &stored, w + limit.period - 1, 1);
    EXPECT_DOUBLE_EQ(out.balance, 1);
    EXPECT_FALSE(Take(limit, &stored, w + limit.period - 1, 3).allowed);
}

TEST(FixedWindow, EachBoundaryCrossedAddsRate) {
    const Limit limit = FixedWindow(5, 2 * kMin, 20, 0);
    const Micros w = WindowStart(kT0, 0, limit.period);
    const State stored{0, w + 1};
    // Three boundaries crossed: 15 units.
    const Micros now = w + 3 * limit.period + 7;
    EXPECT_FALSE(Take(limit, &stored, now, 16).allowed);
    const Outcome out = Take(limit, &stored, now, 15);
    EXPECT_TRUE(out.allowed);
    EXPECT_DOUBLE_EQ(out.balance, 0);
    EXPECT_EQ(out.next.ts, now);
}

TEST(FixedWindow, CapacityBelowRate) {
    const Limit limit = FixedWindow(10, 2 * kMin, 4, 0);
    const Micros w = WindowStart(kT0, 0, limit.period);
    const State stored{0, w};
    const Outcome out = Take(limit, &stored, w + limit.period, 4);
    EXPECT_TRUE(out.allowed);
    EXPECT_DOUBLE_EQ(out.balance, 0);
    EXPECT_FALSE(Take(limit, &stored, w + limit.period, 5).allowed);
    EXPECT_EQ(out.reset_after, limit.period);
}

TEST(FixedWindow, CapacityAboveRateNeedsSeveralWindows) {
    const Limit limit = FixedWindow(5, 2 * kMin, 12, 0);
    const Micros w = WindowStart(kT0, 0, limit.period);
    const State stored{0, w + 1};
    const Outcome denied = Take(limit, &stored, w + 1, 12);
    EXPECT_FALSE(denied.allowed);
    // 5 + 5 + 5 capped at 12: the third boundary.
    EXPECT_EQ(denied.retry_after, 3 * limit.period - 1);
    EXPECT_EQ(denied.reset_after, 3 * limit.period - 1);
    EXPECT_FALSE(Take(limit, &stored, w + 3 * limit.period - 1, 12).allowed);
    const Outcome ok = Take(limit, &stored, w + 3 * limit.period, 12);
    EXPECT_TRUE(ok.allowed);
    EXPECT_DOUBLE_EQ(ok.balance, 0);
    // Exactly two windows of units (10) need exactly two boundaries, not three.
    const Outcome ten = Take(limit, &stored, w + 1, 10);
    EXPECT_EQ(ten.retry_after, 2 * limit.period - 1);
}

TEST(FixedWindow, PerKeyOriginFromTheHash) {
    const Limit limit = FixedWindowPerKey(5, 2 * kMin, 5);
    const std::uint64_t hash = Hash("user:42");
    const Micros origin = window_origin(limit, hash);
    const Micros boundary = WindowStart(kT0, origin, limit.period) + limit.period;
    const State stored{0, boundary - 10};
    const Outcome before = request(limit, &stored, boundary - 1, 1, false, origin);
    EXPECT_FALSE(before.allowed);
    EXPECT_EQ(before.retry_after, 1);
    EXPECT_TRUE(request(limit, &stored, boundary, 1, false, origin).allowed);
    // The grid of another origin does not apply: with origin 0 the boundary is elsewhere.
    if (origin >= 10) {  // no multiple of period in (boundary - 10, boundary]
        EXPECT_FALSE(request(limit, &stored, boundary, 1, false, 0).allowed);
    }
}

TEST(FixedWindow, NowBeforeAFutureStart) {
    // start 10 minutes ahead: the grid extends backwards, start - 5 * period == kT0.
    const Limit limit = FixedWindow(5, 2 * kMin, 5, kT0 + 10 * kMin);
    State state{};
    const State *stored = nullptr;
    for (int k = 0; k < 5; ++k) {
        const Outcome out = Take(limit, stored, kT0 + kSec);
        ASSERT_TRUE(out.allowed);
        state = out.next;
        stored = &state;
    }
    const Outcome denied = Take(limit, stored, kT0 + kSec);
    EXPECT_FALSE(denied.allowed);
    EXPECT_EQ(denied.retry_after, 2 * kMin - kSec);
    EXPECT_FALSE(Take(limit, stored, kT0 + 2 * kMin - 1).allowed);
    EXPECT_TRUE(Take(limit, stored, kT0 + 2 * kMin).allowed);
}

TEST(FixedWindow, NegativeOffsetNotAMultipleOfPeriod) {
    // start 1000, period 300: the grid is ..., -500, -200, 100, 400, 700, 1000, ...
    const Limit limit = FixedWindow(1, 300, 1, 1000);
    const State stored{0, 120};
    const Outcome denied = Take(limit, &stored, 150);
    EXPECT_FALSE(denied.allowed);
    EXPECT_EQ(denied.retry_after, 250);  // next boundary at 400, not 100 + 300 computed with truncation
    EXPECT_FALSE(Take(limit, &stored, 399).allowed);
    EXPECT_TRUE(Take(limit, &stored, 400).allowed);

    // 100 is itself a boundary: stored at 99 gains at 100.
    const State before_boundary{0, 99};
    EXPECT_TRUE(Take(limit, &before_boundary, 100).allowed);
    const State on_boundary{0, 100};
    EXPECT_FALSE(Take(limit, &on_boundary, 399).allowed);
}

TEST(FixedWindow, NegativeAbsoluteTimes) {
    // Times before 2000-01-01 are negative; -500 is a boundary of the grid above.
    const Limit limit = FixedWindow(1, 300, 1, 1000);
    const State stored{0, -501};
    EXPECT_TRUE(Take(limit, &stored, -500).allowed);
    const State same_window{0, -500};
    EXPECT_FALSE(Take(limit, &same_window, -201).allowed);
    EXPECT_TRUE(Take(limit, &same_window, -200).allowed);
}

TEST(FixedWindow, CrossingTheOrigin) {
    const Limit limit = FixedWindow(2, 100, 10, 1000);
    const State stored{0, 999};
    const Outcome at_origin = Take(limit, &stored, 1000, 2);
    EXPECT_TRUE(at_origin.allowed);
    EXPECT_DOUBLE_EQ(at_origin.balance, 0);
    // Stored in [700, 800), now in [1200, 1300): crosses 800, 900, 1000, 1100 and 1200, 5 boundaries.
    const State early{0, 750};
    const Outcome out = Take(limit, &early, 1250, 10);
    EXPECT_TRUE(out.allowed);
    EXPECT_FALSE(Take(limit, &early, 1199, 10).allowed);
}

TEST(FixedWindow, VeryLongIdleIsCappedWithoutOverflow) {
    const Limit limit = FixedWindow(MAX_UNITS, 1, MAX_UNITS, 0);
    const State stored{0, kT0 - 100 * kYear};
    const Outcome out = Take(limit, &stored, kT0, MAX_UNITS);
    EXPECT_TRUE(out.allowed);
    EXPECT_TRUE(std::isfinite(out.balance));
    EXPECT_NEAR(out.balance, 0, 1);
}

TEST(FixedWindow, LongIdleWithPerKeyOrigin) {
    const Limit limit = FixedWindowPerKey(5, 2 * kMin, 5);
    const Micros origin = window_origin(limit, Hash("idle"));
    const State stored{-3, kT0 - 30 * kYear};
    const Outcome out = request(limit, &stored, kT0, 5, false, origin);
    EXPECT_TRUE(out.allowed);
    EXPECT_DOUBLE_EQ(out.balance, 0);
}

TEST(FixedWindow, ResetAfterIsTheWindowStartWhereTheKeyIsFull) {
    const Limit limit = FixedWindow(5, 2 * kMin, 12, 0);
    const Micros w = WindowStart(kT0, 0, limit.period);
    const Outcome out = Take(limit, nullptr, w + 1, 12);
    EXPECT_TRUE(out.allowed);
    EXPECT_EQ(out.reset_after, 3 * limit.period - 1);
    const Outcome partial = Take(limit, nullptr, w + 1, 4);
    EXPECT_EQ(partial.reset_after, limit.period - 1);
}

}  // namespace
}  // namespace pg_ratelimit::core
