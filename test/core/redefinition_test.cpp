// A redefinition takes effect at its instant: every key is first brought to that instant under the old
// definition, then carried over by the rescale rule (core/rescale.hpp: rescaled_state, which the glue
// applies to every stored key when rescale_rewrites says so). When rescale_rewrites says the stored
// numbers may stay as they are, reading them under the new definition must give, at every later instant,
// exactly what the rewritten state would: otherwise the time before the redefinition is counted at the
// new numbers (a token bucket made faster crediting the time since the key's last call at the new rate).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <sstream>
#include <string>

#include "core/algorithms.hpp"
#include "core/refill.hpp"
#include "core/rescale.hpp"
#include "core/validate.hpp"
#include "random_limits.hpp"
#include "support.hpp"

namespace pg_ratelimit::core {
namespace {

// `from` with a random subset of its numbers changed, still a valid limit of `algorithm`.
Keyed Redefined(Random &random, const Keyed &from, Algorithm algorithm) {
    Keyed to = from;
    Limit &l = to.limit;
    l.algorithm = algorithm;
    const bool sliding = algorithm == Algorithm::sliding_window;
    if (random.Chance(0.5)) l.rate *= random.LogUniform(0.1, 10);
    if (random.Chance(0.4)) {
        const double shortest = sliding ? static_cast<double>(MIN_SLIDING_PERIOD) : 1.0;
        l.period = std::max(static_cast<Micros>(shortest),
                            static_cast<Micros>(static_cast<double>(l.period) * random.LogUniform(0.1, 10)));
    }
    if (random.Chance(0.4)) l.capacity = std::clamp(l.rate * random.LogUniform(1.0 / 30, 30), 1e-3, 1e12);
    if (sliding) {
        l.capacity = l.rate;
        l.max_reserved = 0;
    } else if (random.Chance(0.3)) {
        l.max_reserved = l.capacity * random.Uniform(0, 3);
    }
    l.rate = std::clamp(l.rate, 1e-3, 1e12);
    return to;
}

std::string Describe(const Keyed &from, const Keyed &to, const State &stored, Micros written, Micros at, Rescale rule) {
    std::ostringstream out;
    out.precision(17);
    out << "from: " << Describe(from.limit, from.origin) << "\n  to: " << Describe(to.limit, to.origin) << "\n  "
        << Describe(stored) << " written=" << written << " redefined at=" << at
        << " rule=" << (rule == Rescale::as_is ? "as_is" : "proportional");
    return out.str();
}

struct Pair {
    Algorithm from;
    Algorithm to;
};

class StoredNumbersKept : public ::testing::TestWithParam<Pair> {};

TEST_P(StoredNumbersKept, ReadLaterAsIfRewrittenAtTheRedefinition) {
    const Pair pair = GetParam();
    Random random(0x5edef000 + 0x10 * static_cast<std::uint64_t>(pair.from) + static_cast<std::uint64_t>(pair.to));
    int kept = 0;
    int failures = 0;
    for (int trial = 0; trial < 20000 && failures < 10; ++trial) {
        const Keyed from = RandomLimit(random, pair.from, /*allow_unlimited=*/true);
        Keyed to = Redefined(random, from, pair.to);
        // Same grid origin for window algorithms unless the grid itself changed (a grid change rewrites).
        to.origin = from.origin;
        if (validate_limit(to.limit) != LimitProblem::none) continue;
        const Rescale rule = random.Chance(0.5) ? Rescale::as_is : Rescale::proportional;
        if (rescale_rewrites(from.limit, to.limit)) continue;
        ++kept;
        const Limit &f = from.limit;
        const double debt = std::min(f.max_reserved, 3 * f.capacity);
        const double balance = random.Chance(0.1) ? f.capacity : random.Uniform(-debt, f.capacity);
        const Micros written = kT0 + random.Int(0, kDay);
        const State stored = Encode(random, from, balance, written);
        const Micros fill = std::min<Micros>(FillTime(f), 1'000'000 * kSec);
        const Micros redefined = written + random.Int(0, fill);
        const State rewritten = rescaled_state(f, to.limit, stored, redefined, from.origin, to.origin, rule);
        const double tol = tolerance(to.limit) + 1e-12 * to.limit.capacity;
        bool ok = true;
        for (int probe = 0; probe < 4 && ok; ++probe) {
            const Micros now = redefined + (probe == 0 ? 0 : random.Int(0, FillTime(to.limit)));
            const double lazily = balance_at(to.limit, &stored, now, to.origin);
            const double eagerly = balance_at(to.limit, &rewritten, now, to.origin);
            ok = std::fabs(lazily - eagerly) <= tol + StoreLoss(to.limit);
            EXPECT_TRUE(ok) << Describe(from, to, stored, written, redefined, rule) << "\n  at " << now
                            << ": kept numbers read " << lazily << ", rewritten " << eagerly;
        }
        if (!ok) ++failures;
    }
    EXPECT_GT(kept, 500);
}

std::string PairName(const ::testing::TestParamInfo<Pair> &info) {
    return std::string(AlgorithmName(info.param.from)) + "_to_" + AlgorithmName(info.param.to);
}

INSTANTIATE_TEST_SUITE_P(EveryAlgorithm, StoredNumbersKept,
                         ::testing::Values(Pair{Algorithm::token_bucket, Algorithm::token_bucket},
                                           Pair{Algorithm::gcra, Algorithm::gcra},
                                           Pair{Algorithm::fixed_window, Algorithm::fixed_window},
                                           Pair{Algorithm::sliding_window, Algorithm::sliding_window}),
                         PairName);

// The defect the rule above catches: token bucket, 5 per second, capacity 2; at t0 a key reserves 2, then
// 2 more (2 units of debt); at t0 + 200 ms the limit becomes 10 per second. Under the old rate the key
// earned 1 unit in those 200 ms (1 of debt left), so a request of 1 right after must wait 200 ms, not 100.
TEST(Redefinition, FasterTokenBucketDoesNotCreditThePastAtTheNewRate) {
    const Limit slow = TokenBucket(5, kSec, 2, kInf);
    const Limit fast = TokenBucket(10, kSec, 2, kInf);
    Outcome a = request(slow, nullptr, kT0, 2, true, 0);
    Outcome b = request(slow, &a.next, kT0, 2, true, 0);
    ASSERT_TRUE(b.allowed);
    const Micros redefined = kT0 + 200 * kMs;
    ASSERT_TRUE(rescale_rewrites(slow, fast));
    const State carried = rescaled_state(slow, fast, b.next, redefined, 0, 0, Rescale::as_is);
    const Outcome after = request(fast, &carried, redefined, 1, false, 0);
    EXPECT_FALSE(after.allowed);
    EXPECT_EQ(after.retry_after, 200 * kMs);
    // A refund of 2 leaves 1 unit: a request of 2 is denied.
    const Outcome refunded = refund(fast, &carried, redefined, 2, 0);
    EXPECT_FALSE(request(fast, &refunded.next, redefined, 2, false, 0).allowed);
}

}  // namespace
}  // namespace pg_ratelimit::core
