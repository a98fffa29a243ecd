// jittered() (algorithms.hpp): a denied call's retry_after spread by up to Limit::jitter microseconds, so
// that clients told to wait do not all come back at the same instant: retry_after + random % (jitter + 1),
// never beyond MAX_DURATION, never shorter than the true wait; validation of the jitter itself.
#include <gtest/gtest.h>

#include <algorithm>
#include <limits>
#include <random>
#include <set>

#include "core/algorithms.hpp"
#include "core/validate.hpp"
#include "support.hpp"

namespace pg_ratelimit::core {
namespace {

Limit WithJitter(Micros jitter) {
    Limit limit = TokenBucket(10, kSec, 10);
    limit.jitter = jitter;
    return limit;
}

TEST(Jittered, NoJitterLeavesRetryAfterUnchanged) {
    const Limit limit = WithJitter(0);
    for (const Micros retry_after : {Micros{0}, Micros{1}, 250 * kMs, MAX_DURATION}) {
        for (const std::uint64_t random :
             {std::uint64_t{0}, std::uint64_t{1}, std::uint64_t{12345}, ~std::uint64_t{0}}) {
            EXPECT_EQ(jittered(limit, retry_after, random), retry_after) << retry_after << " " << random;
        }
    }
}

TEST(Jittered, AddsRandomModuloJitterPlusOne) {
    const Limit limit = WithJitter(1000);
    const Micros retry_after = 250 * kMs;
    EXPECT_EQ(jittered(limit, retry_after, 0), retry_after);
    EXPECT_EQ(jittered(limit, retry_after, 1), retry_after + 1);
    EXPECT_EQ(jittered(limit, retry_after, 1000), retry_after + 1000);  // the whole jitter is reachable
    EXPECT_EQ(jittered(limit, retry_after, 1001), retry_after);
    EXPECT_EQ(jittered(limit, retry_after, 123456), retry_after + 123456 % 1001);
    EXPECT_EQ(jittered(limit, retry_after, ~std::uint64_t{0}),
              retry_after + static_cast<Micros>(~std::uint64_t{0} % 1001));
}

// Over random draws: always within [retry_after, retry_after + jitter], and spread over that range.
TEST(Jittered, WithinTheJitterAndSpread) {
    std::mt19937_64 rng(0x7177e4);
    for (const Micros jitter : {Micros{1}, Micros{7}, kSec, MAX_JITTER}) {
        const Limit limit = WithJitter(jitter);
        ASSERT_EQ(validate_limit(limit), LimitProblem::none) << jitter;
        const Micros retry_after = 3 * kSec;
        std::set<Micros> seen;
        Micros lowest = MAX_DURATION;
        Micros highest = 0;
        long double sum = 0;
        constexpr int kDraws = 20000;
        for (int k = 0; k < kDraws; ++k) {
            const Micros out = jittered(limit, retry_after, rng());
            ASSERT_GE(out, retry_after) << jitter;
            ASSERT_LE(out, retry_after + jitter) << jitter;
            if (seen.size() < 100) seen.insert(out);
            lowest = std::min(lowest, out);
            highest = std::max(highest, out);
            sum += static_cast<long double>(out - retry_after);
        }
        // It uses the random argument: many distinct values, close to both ends, centred on jitter / 2.
        EXPECT_GE(seen.size(), std::min<std::size_t>(100, static_cast<std::size_t>(jitter) + 1)) << jitter;
        EXPECT_LE(static_cast<long double>(lowest - retry_after), 0.01L * jitter + 0.5L) << jitter;
        EXPECT_GE(static_cast<long double>(highest - retry_after), 0.99L * jitter - 0.5L) << jitter;
        EXPECT_NEAR(static_cast<double>(sum / kDraws), static_cast<double>(jitter) / 2,
                    0.02 * static_cast<double>(jitter) + 0.1)
            << jitter;
    }
}

TEST(Jittered, SaturatesAtMaxDuration) {
    const Limit limit = WithJitter(MAX_JITTER);
    EXPECT_EQ(jittered(limit, MAX_DURATION, MAX_JITTER), MAX_DURATION);
    EXPECT_EQ(jittered(limit, MAX_DURATION - 10, MAX_JITTER), MAX_DURATION);
    EXPECT_EQ(jittered(limit, MAX_DURATION - 10, 4), MAX_DURATION - 6);
    EXPECT_EQ(jittered(limit, MAX_DURATION, 0), MAX_DURATION);
}

TEST(Jittered, Validation) {
    for (const Micros jitter : {Micros{0}, Micros{1}, kSec, MAX_JITTER}) {
        EXPECT_EQ(validate_limit(WithJitter(jitter)), LimitProblem::none) << jitter;
    }
    for (const Micros jitter :
         {Micros{-1}, MAX_JITTER + 1, std::numeric_limits<Micros>::min(), std::numeric_limits<Micros>::max()}) {
        EXPECT_EQ(validate_limit(WithJitter(jitter)), LimitProblem::jitter) << jitter;
    }
    EXPECT_EQ(MAX_JITTER, kDay);
}

}  // namespace
}  // namespace pg_ratelimit::core
