// Properties over random limits, states and request streams (seeded std::mt19937_64: deterministic):
// - admission bound: in any stretch of a stream, admitted units never exceed
//   capacity + max_reserved + refill (token bucket: rate * elapsed / period; fixed window: rate * boundaries);
// - retry_after: the same request succeeds at now + retry_after and not earlier (token bucket: within 1 us);
//   a reservation's debt is repaid at now + retry_after and not earlier;
// - reset_after: the key is full at now + reset_after and not earlier;
// - a clock stepping backwards mints nothing.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "core/algorithms.hpp"
#include "core/refill.hpp"
#include "support.hpp"

namespace pg_ratelimit::core {
namespace {

const char *Name(Algorithm algorithm) { return algorithm == Algorithm::token_bucket ? "token_bucket" : "fixed_window"; }

std::string Describe(const Limit &l, Micros origin) {
    std::ostringstream out;
    out.precision(17);
    out << Name(l.algorithm) << " rate=" << l.rate << " period=" << l.period << " capacity=" << l.capacity
        << " max_reserved=" << l.max_reserved << " origin=" << origin;
    return out.str();
}

std::string Describe(const State &s) {
    std::ostringstream out;
    out.precision(17);
    out << "stored={" << s.value << ", " << s.ts << "}";
    return out.str();
}

class Random {
  public:
    explicit Random(std::uint64_t seed) : rng_(seed) {}
    double Uniform(double lo, double hi) { return std::uniform_real_distribution<double>(lo, hi)(rng_); }
    double LogUniform(double lo, double hi) { return std::exp(Uniform(std::log(lo), std::log(hi))); }
    Micros Int(Micros lo, Micros hi) { return std::uniform_int_distribution<Micros>(lo, hi)(rng_); }
    bool Chance(double p) { return Uniform(0, 1) < p; }

  private:
    std::mt19937_64 rng_;
};

struct Keyed {
    Limit limit;
    Micros origin = 0;
};

// A random valid limit. Rates from 1e-3 to 1e6 per period, periods from 1 us to 30 days, capacity
// from 1/30 to 30 times the rate.
Keyed RandomLimit(Random &random, Algorithm algorithm, bool allow_unlimited) {
    Keyed s;
    Limit &l = s.limit;
    l.algorithm = algorithm;
    l.rate = random.LogUniform(1e-3, 1e6);
    if (random.Chance(0.3)) l.rate = std::round(std::max(1.0, l.rate));  // integral rates are common
    l.period = static_cast<Micros>(random.LogUniform(1, 30.0 * kDay));
    l.capacity = std::clamp(l.rate * random.LogUniform(1.0 / 30, 30), 1e-3, 1e12);
    if (random.Chance(0.2)) l.capacity = l.rate;
    const double kind = random.Uniform(0, 1);
    if (kind < 0.4) {
        l.max_reserved = 0;
    } else if (kind < 0.8 || !allow_unlimited) {
        l.max_reserved = l.capacity * random.Uniform(0, 3);
    } else {
        l.max_reserved = kInf;
    }
    if (algorithm == Algorithm::fixed_window) {
        if (random.Chance(0.5)) {
            l.has_start = true;
            l.start = kT0 + random.Int(-10 * kYear, 10 * kYear);
        }
        s.origin = window_origin(l, static_cast<std::uint64_t>(random.Int(0, std::numeric_limits<Micros>::max())));
    }
    return s;
}

double RandomCost(Random &random, const Limit &l) {
    const double kind = random.Uniform(0, 1);
    if (kind < 0.1) return l.capacity;
    if (kind < 0.4 && l.capacity >= 1) return 1;
    return l.capacity * random.LogUniform(1e-3, 1);
}

// Time for the key to refill completely from empty, bounded to keep sums far from int64 limits.
Micros FillTime(const Limit &l) {
    const double periods =
        l.algorithm == Algorithm::token_bucket ? l.capacity / l.rate : std::ceil(l.capacity / l.rate);
    return static_cast<Micros>(std::min(periods * static_cast<double>(l.period), 1e15)) + 1;
}

Level LevelAt(const Keyed &s, const State &state, Micros now) {
    const RefillRules &rules = s.limit.algorithm == Algorithm::token_bucket ? token_bucket_rules : fixed_window_rules;
    return rules.level(s.limit, state, now, s.origin);
}

// floor((t - origin) / period)
Micros WindowIndex(Micros t, Micros origin, Micros period) {
    const Micros offset = t - origin;
    return offset / period - ((offset % period != 0 && offset < 0) ? 1 : 0);
}

// ---- Admission bound ----------------------------------------------------------------------------------

class AdmissionBound : public ::testing::TestWithParam<Algorithm> {};

TEST_P(AdmissionBound, AnyStretchOfARandomStream) {
    const Algorithm algorithm = GetParam();
    Random random(algorithm == Algorithm::token_bucket ? 0x5eed0001 : 0x5eed0002);
    int stretches_at_bound = 0;
    for (int trial = 0; trial < 300; ++trial) {
        const Keyed s = RandomLimit(random, algorithm, /*allow_unlimited=*/false);
        const Limit &l = s.limit;
        const double unit_cost = RandomCost(random, l);
        // Mean spacing around the time one request's units take to refill, from 5x faster to 2x slower.
        const double refill_one = unit_cost / l.rate * static_cast<double>(l.period);
        const Micros mean_gap = static_cast<Micros>(std::min(refill_one * random.LogUniform(0.2, 2), 1e12));
        State state{};
        const State *stored = nullptr;
        Micros now = kT0 + random.Int(0, kDay);
        // refill(t): units added up to t, on the same axis for every stretch (relative to the first request).
        const Micros first = now;
        auto refill = [&](Micros t) -> long double {
            if (algorithm == Algorithm::token_bucket) {
                return static_cast<long double>(l.rate) * static_cast<long double>(t - first) /
                       static_cast<long double>(l.period);
            }
            return static_cast<long double>(l.rate) * static_cast<long double>(WindowIndex(t, s.origin, l.period) -
                                                                               WindowIndex(first, s.origin, l.period));
        };
        const long double slack = 2 * tolerance(l) + 1e-9 * (l.capacity + l.max_reserved);
        long double admitted = 0;  // through the current request
        long double best =
            std::numeric_limits<long double>::infinity();  // min over a of admitted_before(a) - refill(t_a)
        long double worst_excess = -std::numeric_limits<long double>::infinity();
        for (int i = 0; i < 3000; ++i) {
            if (i > 0 && !random.Chance(0.3)) now += random.Int(0, 2 * mean_gap);
            const double cost = random.Chance(0.7) ? unit_cost : RandomCost(random, l);
            const bool reserve = l.max_reserved > 0 && random.Chance(0.3);
            best = std::min(best, admitted - refill(now));
            const Outcome out = request(l, stored, now, cost, reserve, s.origin);
            if (out.allowed) {
                admitted += cost;
                state = out.next;
                stored = &state;
            }
            // Units admitted in [t_a, now] minus what the spec allows for that stretch.
            const long double excess = admitted - refill(now) - best - (l.capacity + l.max_reserved);
            worst_excess = std::max(worst_excess, excess);
        }
        EXPECT_LE(worst_excess, slack) << "trial " << trial << ": " << Describe(l, s.origin);
        if (worst_excess > -slack - 1e-6L * (l.capacity + 1)) ++stretches_at_bound;
    }
    // The streams are dense enough that many trials reach the bound exactly, so it is tight.
    EXPECT_GT(stretches_at_bound, 30);
}

TEST_P(AdmissionBound, WholeStreamWithClockSteppingBack) {
    const Algorithm algorithm = GetParam();
    Random random(algorithm == Algorithm::token_bucket ? 0x5eed0003 : 0x5eed0004);
    for (int trial = 0; trial < 300; ++trial) {
        const Keyed s = RandomLimit(random, algorithm, false);
        const Limit &l = s.limit;
        const double unit_cost = RandomCost(random, l);
        const double refill_one = unit_cost / l.rate * static_cast<double>(l.period);
        const Micros mean_gap = static_cast<Micros>(std::min(refill_one * random.LogUniform(0.2, 2), 1e12));
        State state{};
        const State *stored = nullptr;
        const Micros first = kT0 + random.Int(0, kDay);
        Micros now = first;
        Micros latest = first;
        long double admitted = 0;
        for (int i = 0; i < 2000; ++i) {
            if (i > 0) {
                if (random.Chance(0.15)) {
                    now -= random.Int(0, 5 * std::max(mean_gap, l.period));  // the clock steps back
                } else if (!random.Chance(0.3)) {
                    now += random.Int(0, 2 * mean_gap);
                }
            }
            latest = std::max(latest, now);
            const bool reserve = l.max_reserved > 0 && random.Chance(0.3);
            const Outcome out = request(l, stored, now, unit_cost, reserve, s.origin);
            if (out.allowed) {
                admitted += unit_cost;
                state = out.next;
                stored = &state;
                ASSERT_LE(state.ts, latest);  // the key never runs ahead of the real clock
            }
        }
        const long double refill = algorithm == Algorithm::token_bucket
                                       ? static_cast<long double>(l.rate) * (latest - first) / l.period
                                       : static_cast<long double>(l.rate) * (WindowIndex(latest, s.origin, l.period) -
                                                                             WindowIndex(first, s.origin, l.period));
        const long double slack = 2 * tolerance(l) + 1e-9 * (l.capacity + l.max_reserved);
        EXPECT_LE(admitted, l.capacity + l.max_reserved + refill + slack)
            << "trial " << trial << ": " << Describe(l, s.origin);
    }
}

// ---- retry_after and reset_after --------------------------------------------------------------------------

struct Case {
    Keyed s;
    State stored;
    Micros now;
    double cost;
    bool reserve;
};

Case RandomCase(Random &random, Algorithm algorithm) {
    Case c;
    c.s = RandomLimit(random, algorithm, /*allow_unlimited=*/true);
    const Limit &l = c.s.limit;
    const double debt = std::min(l.max_reserved, 3 * l.capacity) + (random.Chance(0.1) ? l.capacity : 0);
    c.cost = RandomCost(random, l);
    // Often just short of the cost, so that many requests are denied.
    const double high = random.Chance(0.5) ? c.cost : l.capacity;
    c.stored.value = random.Chance(0.1) ? l.capacity : random.Uniform(-debt, high);
    c.stored.ts = kT0 + random.Int(-kDay, kDay);
    const Micros fill = FillTime(l);
    if (random.Chance(0.2)) {
        c.now = c.stored.ts - random.Int(0, std::min<Micros>(10 * l.period, kYear));  // clock stepped back
    } else if (random.Chance(0.2)) {
        c.now = c.stored.ts;
    } else {
        c.now = c.stored.ts + random.Int(0, std::min<Micros>(fill, 1'000'000 * kSec));
    }
    c.reserve = random.Chance(0.5);
    return c;
}

std::string Describe(const Case &c) {
    std::ostringstream out;
    out.precision(17);
    out << Describe(c.s.limit, c.s.origin) << " " << Describe(c.stored) << " now=" << c.now << " cost=" << c.cost
        << " reserve=" << c.reserve;
    return out.str();
}

Outcome Decide(const Case &c, Micros now) { return request(c.s.limit, &c.stored, now, c.cost, c.reserve, c.s.origin); }

class Durations : public ::testing::TestWithParam<Algorithm> {};

TEST_P(Durations, DeniedRequestSucceedsAtRetryAfter) {
    const Algorithm algorithm = GetParam();
    Random random(algorithm == Algorithm::token_bucket ? 0xdead0001 : 0xdead0002);
    int denied = 0;
    int failures = 0;
    for (int trial = 0; trial < 20000 && failures < 10; ++trial) {
        const Case c = RandomCase(random, algorithm);
        const Outcome out = Decide(c, c.now);
        if (out.allowed) continue;
        ++denied;
        bool ok = !out.write && out.retry_after > 0 && out.retry_after <= MAX_DURATION &&
                  out.balance == LevelAt(c.s, c.stored, c.now).value;
        if (out.retry_after < MAX_DURATION) ok = ok && Decide(c, c.now + out.retry_after).allowed;
        EXPECT_TRUE(ok) << Describe(c) << " retry_after=" << out.retry_after << " balance=" << out.balance;
        if (!ok) ++failures;
    }
    EXPECT_GT(denied, 3000);
}

// SPEC: "at now + retry_after - 1 it must still be denied (for token bucket at least within 1 microsecond
// rounding)". Fails for the token bucket at slow rates (see TokenBucket.DeniedJustBeforeRetryAfter for
// the minimal case): admission forgives a shortfall up to tolerance() units, but retry_after is the exact
// refill time, so the request already succeeds up to tolerance() * period / rate microseconds earlier.
TEST_P(Durations, DeniedRequestStillDeniedJustBeforeRetryAfter) {
    const Algorithm algorithm = GetParam();
    const bool bucket = algorithm == Algorithm::token_bucket;
    Random random(bucket ? 0xdead0001 : 0xdead0002);  // the same cases as above
    const Micros early = bucket ? 2 : 1;              // token bucket: one microsecond of rounding allowed
    int checked = 0;
    int failures = 0;
    for (int trial = 0; trial < 20000 && failures < 10; ++trial) {
        const Case c = RandomCase(random, algorithm);
        const Outcome out = Decide(c, c.now);
        if (out.allowed || out.retry_after >= MAX_DURATION || out.retry_after < early) continue;
        ++checked;
        const Outcome before = Decide(c, c.now + out.retry_after - early);
        EXPECT_FALSE(before.allowed) << Describe(c) << " retry_after=" << out.retry_after
                                     << ": already allowed at retry_after - " << early
                                     << " (tolerance * period / rate = "
                                     << tolerance(c.s.limit) * static_cast<double>(c.s.limit.period) / c.s.limit.rate
                                     << " us)";
        if (before.allowed) ++failures;
    }
    EXPECT_GT(checked, 3000);
}

TEST_P(Durations, RetryAfterOfAReservation) {
    const Algorithm algorithm = GetParam();
    const bool bucket = algorithm == Algorithm::token_bucket;
    Random random(bucket ? 0xdead0003 : 0xdead0004);
    int in_debt = 0;
    int failures = 0;
    for (int trial = 0; trial < 20000 && failures < 10; ++trial) {
        Case c = RandomCase(random, algorithm);
        c.reserve = true;
        const Outcome out = Decide(c, c.now);
        if (!out.allowed) continue;
        const double tol = tolerance(c.s.limit);
        bool ok = out.write && out.next.value == out.balance && out.next.ts == std::max(c.now, c.stored.ts);
        if (out.balance >= -tol) {
            ok = ok && out.retry_after == 0;
        } else if (out.retry_after < MAX_DURATION) {
            ++in_debt;
            const Micros early = bucket ? 2 : 1;
            // Repaid at now + retry_after: the balance is back at zero (within the rounding tolerance),
            // and still in debt just before.
            const Micros then = c.now + out.retry_after;
            ok = ok && out.retry_after > 0 && LevelAt(c.s, out.next, then).value >= -tol;
            ok = ok && (out.retry_after < early || LevelAt(c.s, out.next, then - early).value < 0);
        }
        EXPECT_TRUE(ok) << Describe(c) << " balance=" << out.balance << " retry_after=" << out.retry_after;
        if (!ok) ++failures;
    }
    EXPECT_GT(in_debt, 2000);
}

TEST_P(Durations, ResetAfter) {
    const Algorithm algorithm = GetParam();
    const bool bucket = algorithm == Algorithm::token_bucket;
    Random random(bucket ? 0xdead0005 : 0xdead0006);
    int failures = 0;
    for (int trial = 0; trial < 20000 && failures < 10; ++trial) {
        const Case c = RandomCase(random, algorithm);
        const Outcome out = Decide(c, c.now);
        const State after = out.allowed ? out.next : c.stored;
        const double full = c.s.limit.capacity - tolerance(c.s.limit);
        bool ok = out.reset_after >= 0 && out.reset_after <= MAX_DURATION;
        if (out.reset_after == 0) {
            ok = ok && LevelAt(c.s, after, c.now).value >= full;
        } else if (out.reset_after < MAX_DURATION) {
            const Micros early = bucket ? 2 : 1;
            // Full at now + reset_after (within the rounding tolerance), and not yet full just before.
            ok = ok && LevelAt(c.s, after, c.now + out.reset_after).value >= full;
            ok = ok && (out.reset_after < early ||
                        LevelAt(c.s, after, c.now + out.reset_after - early).value < c.s.limit.capacity);
        }
        EXPECT_TRUE(ok) << Describe(c) << " allowed=" << out.allowed << " balance=" << out.balance
                        << " reset_after=" << out.reset_after;
        if (!ok) ++failures;
    }
}

TEST_P(Durations, RefundFields) {
    const Algorithm algorithm = GetParam();
    Random random(algorithm == Algorithm::token_bucket ? 0xdead0007 : 0xdead0008);
    int failures = 0;
    for (int trial = 0; trial < 20000 && failures < 10; ++trial) {
        const Case c = RandomCase(random, algorithm);
        const Outcome out = refund(c.s.limit, &c.stored, c.now, c.cost, c.s.origin);
        const Level level = LevelAt(c.s, c.stored, c.now);
        const double tol = tolerance(c.s.limit);
        const bool changed = out.next.value != c.stored.value || out.next.ts != c.stored.ts;
        bool ok = out.allowed && out.write == changed && out.balance <= c.s.limit.capacity &&
                  out.balance == std::min(level.value + c.cost, c.s.limit.capacity) && out.next.ts == level.at;
        ok = ok && ((out.balance >= -tol) == (out.retry_after == 0));
        EXPECT_TRUE(ok) << Describe(c) << " balance=" << out.balance << " retry_after=" << out.retry_after;
        if (!ok) ++failures;
    }
}

// ---- Clock stepping back -----------------------------------------------------------------------------------

TEST_P(Durations, EarlierThenOriginalNeverGivesMore) {
    const Algorithm algorithm = GetParam();
    Random random(algorithm == Algorithm::token_bucket ? 0xdead0009 : 0xdead000a);
    for (int trial = 0; trial < 2000; ++trial) {
        Case c = RandomCase(random, algorithm);
        c.cost = c.s.limit.capacity * random.LogUniform(0.01, 1);
        c.reserve = c.reserve && std::isfinite(c.s.limit.max_reserved);  // unlimited debt drains forever
        const Micros back = c.stored.ts - random.Int(1, std::min<Micros>(10 * c.s.limit.period, kYear));
        auto drain = [&](State &state, Micros now) {
            double taken = 0;
            for (int k = 0; k < 1000; ++k) {
                const Outcome out = request(c.s.limit, &state, now, c.cost, c.reserve, c.s.origin);
                if (!out.allowed) break;
                taken += c.cost;
                state = out.next;
            }
            return taken;
        };
        State once = c.stored;
        const double single = drain(once, c.stored.ts);
        State twice = c.stored;
        const double stepped_back = drain(twice, back);
        const double both = stepped_back + drain(twice, c.stored.ts);
        EXPECT_LE(both, single + 1e-9 * c.s.limit.capacity) << Describe(c) << " back=" << back;
    }
}

// A function rather than a static generator: building one at static initialisation may throw.
auto BothAlgorithms() { return ::testing::Values(Algorithm::token_bucket, Algorithm::fixed_window); }
std::string AlgorithmName(const ::testing::TestParamInfo<Algorithm> &info) { return Name(info.param); }

INSTANTIATE_TEST_SUITE_P(BothAlgorithms, AdmissionBound, BothAlgorithms(), AlgorithmName);
INSTANTIATE_TEST_SUITE_P(BothAlgorithms, Durations, BothAlgorithms(), AlgorithmName);

}  // namespace
}  // namespace pg_ratelimit::core
