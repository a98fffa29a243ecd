// Float precision: fractional costs, whole_units, tiny and huge rates, duration clamping, and long runs
// (millions of requests over years of simulated time) checked against an exact integer model of the
// specification, so that any drift of the double arithmetic shows up.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>

#include "core/algorithms.hpp"
#include "core/refill.hpp"
#include "support.hpp"

namespace pg_ratelimit::core {
namespace {

// Repeats `cost` at one instant from a full key; returns how many were admitted.
int CountAdmitted(const Limit &limit, double cost, int attempts) {
    State state{};
    const State *stored = nullptr;
    int admitted = 0;
    for (int k = 0; k < attempts; ++k) {
        const Outcome out = Take(limit, stored, kT0, cost);
        if (!out.allowed) continue;
        ++admitted;
        state = out.next;
        stored = &state;
    }
    return admitted;
}

class FractionalCosts : public ::testing::TestWithParam<Algorithm> {};

TEST_P(FractionalCosts, TenthsFromOneAdmitExactlyTen) {
    const Limit limit = Make(GetParam(), 1, kHour, 1);
    EXPECT_EQ(CountAdmitted(limit, 0.1, 20), 10);
}

TEST_P(FractionalCosts, ThirdsAndHundredths) {
    EXPECT_EQ(CountAdmitted(Make(GetParam(), 1, kHour, 1), 1.0 / 3, 10), 3);
    EXPECT_EQ(CountAdmitted(Make(GetParam(), 1, kHour, 1), 0.01, 200), 100);
    EXPECT_EQ(CountAdmitted(Make(GetParam(), 1, kHour, 7), 0.7, 20), 10);
    EXPECT_EQ(CountAdmitted(Make(GetParam(), 1, kHour, 0.3), 0.1, 10), 3);
}

TEST_P(FractionalCosts, MixedSumToCapacity) {
    const Limit limit = Make(GetParam(), 1, kHour, 1);
    State state{};
    const State *stored = nullptr;
    for (const double cost : {0.7, 0.2, 0.1}) {
        const Outcome out = Take(limit, stored, kT0, cost);
        ASSERT_TRUE(out.allowed) << cost;
        state = out.next;
        stored = &state;
    }
    EXPECT_EQ(whole_units(limit, state.value), 0);
    EXPECT_FALSE(Take(limit, stored, kT0, 0.1).allowed);
}

TEST_P(FractionalCosts, LastTenthRetryAfter) {
    // After ten tenths the key is at (about) zero: the 11th waits for one tenth, not less, not more.
    const Limit limit = Make(GetParam(), 1, 10 * kSec, 1);
    State state{};
    const State *stored = nullptr;
    for (int k = 0; k < 10; ++k) {
        state = Take(limit, stored, kT0, 0.1).next;
        stored = &state;
    }
    const Outcome out = Take(limit, stored, kT0, 0.1);
    EXPECT_FALSE(out.allowed);
    if (GetParam() == Algorithm::token_bucket) {
        EXPECT_NEAR(static_cast<double>(out.retry_after), static_cast<double>(kSec), 1);
    } else {
        EXPECT_EQ(out.retry_after, 10 * kSec - kT0 % (10 * kSec));
    }
}

INSTANTIATE_TEST_SUITE_P(BothAlgorithms, FractionalCosts,
                         ::testing::Values(Algorithm::token_bucket, Algorithm::fixed_window),
                         [](const ::testing::TestParamInfo<Algorithm> &info) {
                             return info.param == Algorithm::token_bucket ? "token_bucket" : "fixed_window";
                         });

TEST(Precision, FractionalRefillAdmitsEveryTenth) {
    // 0.1 per second, a request of 0.1 every second from empty: every one is admitted.
    const Limit limit = Make(Algorithm::token_bucket, 1, 10 * kSec, 1);
    State state{0, kT0};
    for (int k = 1; k <= 1000; ++k) {
        const Outcome out = Take(limit, &state, kT0 + k * kSec, 0.1);
        ASSERT_TRUE(out.allowed) << k;
        EXPECT_EQ(out.retry_after, 0);
        state = out.next;
    }
    EXPECT_NEAR(state.value, 0, 1e-9);
    EXPECT_FALSE(Take(limit, &state, kT0 + 1000 * kSec, 0.1).allowed);
}

TEST(WholeUnits, FloorWithTolerance) {
    const Limit limit = Make(Algorithm::token_bucket, 10, kSec, 10);
    EXPECT_EQ(whole_units(limit, 0), 0);
    EXPECT_EQ(whole_units(limit, 0.999), 0);
    EXPECT_EQ(whole_units(limit, 1), 1);
    EXPECT_EQ(whole_units(limit, 3.5), 3);
    EXPECT_EQ(whole_units(limit, std::nextafter(3.0, 0.0)), 3);  // 2.9999999999999996 is 3 after rounding
    EXPECT_EQ(whole_units(limit, 3 - 1e-14), 3);  // float noise, well inside the tolerance (1e-14 x capacity)
    EXPECT_EQ(whole_units(limit, 3 - 1e-9), 2);   // a real shortfall
    EXPECT_EQ(whole_units(limit, 10), 10);
}

TEST(WholeUnits, ZeroWhileInDebt) {
    const Limit limit = Make(Algorithm::token_bucket, 10, kSec, 10);
    EXPECT_EQ(whole_units(limit, -1e-12), 0);
    EXPECT_EQ(whole_units(limit, -0.5), 0);
    EXPECT_EQ(whole_units(limit, -3), 0);
    EXPECT_EQ(whole_units(limit, -1e15), 0);
}

TEST(WholeUnits, LargeBalances) {
    const Limit limit = Make(Algorithm::token_bucket, MAX_UNITS, kSec, MAX_UNITS);
    EXPECT_EQ(whole_units(limit, MAX_UNITS), static_cast<std::int64_t>(MAX_UNITS));
    EXPECT_EQ(whole_units(limit, MAX_UNITS - 1), static_cast<std::int64_t>(MAX_UNITS) - 1);
    EXPECT_EQ(whole_units(limit, 123456789012.75), 123456789012);
}

TEST(Precision, TinyRate) {
    // 1e-9 per second: one unit takes 1e9 s (about 31.7 years).
    const Limit limit = Make(Algorithm::token_bucket, 1e-9, kSec, 1);
    const State stored{0, kT0};
    const Outcome denied = Take(limit, &stored, kT0, 1);
    ASSERT_FALSE(denied.allowed);
    EXPECT_NEAR(static_cast<double>(denied.retry_after), 1e15, 1e15 * 1e-8);
    EXPECT_TRUE(Take(limit, &stored, kT0 + denied.retry_after, 1).allowed);
    // (Whether it is denied just before retry_after: see RetryAfter.NotAllowedEarlierAtSlowRates.)
    EXPECT_FALSE(Take(limit, &stored, kT0 + denied.retry_after - 10 * kSec, 1).allowed);
    // Idle for a year gains 0.0316 units: nothing to report as whole.
    const Outcome year = Take(limit, &stored, kT0 + 365 * kDay, 0.01);
    EXPECT_TRUE(year.allowed);
    EXPECT_NEAR(year.balance, 0.0315360 - 0.01, 1e-6);
}

TEST(Precision, TinyRateFixedWindow) {
    const Limit limit = Make(Algorithm::fixed_window, 1e-9, kSec, 1);
    const State stored{0, kT0};
    const Outcome denied = Take(limit, &stored, kT0, 1);
    ASSERT_FALSE(denied.allowed);
    // 1e9 windows of 1 s; one window less leaves a shortfall of 1e-9 units, which is within tolerance()
    // and admitted (as debt), so either answer is consistent with admission.
    EXPECT_GE(denied.retry_after, Micros{999'999'999} * kSec);
    EXPECT_LE(denied.retry_after, Micros{1'000'000'000} * kSec);
    EXPECT_TRUE(Take(limit, &stored, kT0 + denied.retry_after, 1).allowed);
    EXPECT_FALSE(Take(limit, &stored, kT0 + denied.retry_after - 1, 1).allowed);
}

TEST(Precision, HugeRate) {
    const Limit limit = Make(Algorithm::token_bucket, 1e12, kSec, 1e12);
    const Outcome all = Take(limit, nullptr, kT0, 1e12);
    ASSERT_TRUE(all.allowed);
    EXPECT_NEAR(all.balance, 0, 1e-3);
    EXPECT_EQ(all.reset_after, kSec);
    // 1e6 units per microsecond.
    const Outcome one = Take(limit, &all.next, kT0, 1);
    EXPECT_FALSE(one.allowed);
    EXPECT_EQ(one.retry_after, 1);
    EXPECT_TRUE(Take(limit, &all.next, kT0 + 1, 1).allowed);
    const Outcome whole = Take(limit, &all.next, kT0, 1e12);
    EXPECT_EQ(whole.retry_after, kSec);
    EXPECT_FALSE(Take(limit, &all.next, kT0 + kSec - 2, 1e12).allowed);
    EXPECT_TRUE(Take(limit, &all.next, kT0 + kSec, 1e12).allowed);
}

TEST(Precision, HugeRatePerMicrosecond) {
    const Limit limit = Make(Algorithm::token_bucket, MAX_UNITS / 1000, 1, MAX_UNITS);
    const State stored{0, kT0};
    const Outcome out = Take(limit, &stored, kT0, MAX_UNITS);
    EXPECT_FALSE(out.allowed);
    EXPECT_EQ(out.retry_after, 1000);
    EXPECT_TRUE(Take(limit, &stored, kT0 + 1000, MAX_UNITS).allowed);
}

TEST(Precision, HugeRateFixedWindow) {
    const Limit limit = Make(Algorithm::fixed_window, 1e12, kSec, 5e12);
    const State stored{0, kT0};
    const Outcome out = Take(limit, &stored, kT0, 5e12);
    EXPECT_FALSE(out.allowed);
    EXPECT_EQ(out.retry_after, 5 * kSec - kT0 % kSec);
    EXPECT_TRUE(Take(limit, &stored, kT0 + out.retry_after, 5e12).allowed);
}

TEST(DurationClamp, TinyRateOverTheLongestPeriod) {
    for (const Algorithm algorithm : {Algorithm::token_bucket, Algorithm::fixed_window}) {
        const Limit limit = Make(algorithm, 1e-9, MAX_PERIOD, 1);
        const State stored{0, kT0};
        const Outcome out = Take(limit, &stored, kT0, 1);
        EXPECT_FALSE(out.allowed);
        EXPECT_EQ(out.retry_after, MAX_DURATION);
        EXPECT_EQ(out.reset_after, MAX_DURATION);
    }
}

TEST(DurationClamp, HugeDebt) {
    for (const Algorithm algorithm : {Algorithm::token_bucket, Algorithm::fixed_window}) {
        const Limit limit = Make(algorithm, 1e-3, MAX_PERIOD, 1, kInf);
        const State stored{-(MAX_UNITS - 1), kT0};
        const Outcome out = request(limit, &stored, kT0, 1, true, 0);
        EXPECT_TRUE(out.allowed);
        EXPECT_EQ(out.balance, -MAX_UNITS);
        EXPECT_EQ(out.retry_after, MAX_DURATION);
        EXPECT_EQ(out.reset_after, MAX_DURATION);
        EXPECT_TRUE(std::isfinite(out.balance));
    }
}

// "Unlimited" reservations (max_reserved = +infinity) still stop at a debt of MAX_UNITS, like every other
// figure: deeper debts would lose the precision of small costs and refunds.
TEST(DurationClamp, UnlimitedReservationsStopAtMaxUnits) {
    for (const Algorithm algorithm : {Algorithm::token_bucket, Algorithm::fixed_window}) {
        const Limit limit = Make(algorithm, 1, kSec, 10, kInf);
        const State stored{-MAX_UNITS, kT0};
        const Outcome out = request(limit, &stored, kT0, 1, true, 0);
        EXPECT_FALSE(out.allowed);
        EXPECT_FALSE(out.write);
        const Outcome fits = request(limit, &stored, kT0 + kSec, 1, true, 0);  // one unit repaid meanwhile
        EXPECT_TRUE(fits.allowed);
        EXPECT_GE(fits.balance, -MAX_UNITS - tolerance(limit));
    }
}

// A call that would store exactly what the row holds writes nothing (no new row version for nothing):
// a cost too small to move the balance, or a refund of a full key at the same instant.
TEST(WriteFlag, NothingToWriteWhenTheRowWouldNotChange) {
    const Limit limit = Make(Algorithm::token_bucket, 1, kSec, MAX_UNITS, kInf);
    const State half{MAX_UNITS / 2, kT0};  // a double there resolves 6e-5 units: MIN_UNITS changes nothing
    EXPECT_FALSE(request(limit, &half, kT0, MIN_UNITS, false, 0).write);
    EXPECT_FALSE(request(limit, &half, kT0, MIN_UNITS, true, 0).write);
    EXPECT_TRUE(request(limit, &half, kT0, 1, false, 0).write);
    const State full{MAX_UNITS, kT0};
    EXPECT_FALSE(refund(limit, &full, kT0, 1, 0).write);
    EXPECT_TRUE(request(limit, nullptr, kT0, MIN_UNITS, false, 0).write);  // a new key always gets its row
}

TEST(DurationClamp, ClampDuration) {
    EXPECT_EQ(clamp_duration(0), 0);
    EXPECT_EQ(clamp_duration(-5), 0);
    EXPECT_EQ(clamp_duration(-kInf), 0);
    EXPECT_EQ(clamp_duration(0.2), 1);
    EXPECT_EQ(clamp_duration(1), 1);
    EXPECT_EQ(clamp_duration(1.000001), 2);
    EXPECT_EQ(clamp_duration(1e15 + 0.5), static_cast<Micros>(1e15) + 1);
    EXPECT_EQ(clamp_duration(static_cast<double>(MAX_DURATION)), MAX_DURATION);
    EXPECT_EQ(clamp_duration(1e300), MAX_DURATION);
    EXPECT_EQ(clamp_duration(kInf), MAX_DURATION);
    const Micros nan = clamp_duration(std::numeric_limits<double>::quiet_NaN());
    EXPECT_GE(nan, 0);
    EXPECT_LE(nan, MAX_DURATION);
}

// The tolerance that absorbs float rounding must stay far below one unit at every valid scale: the
// spec says a request is denied if the result would be below zero, and whole_units is the floor of the
// balance "with a tiny float tolerance". tolerance() is 1e-9 + capacity * 1e-15: 1e-3 at
// capacity = MAX_UNITS (1e12; it was a whole unit when MAX_UNITS was 1e15), and as large as the whole
// capacity at capacity = 1e-9. These tests use balances that are exact in binary (0.0, 0.5), so no
// rounding is involved.
TEST(ToleranceScale, EmptyKeyAtMaxUnitsCapacityDeniesOneUnit) {
    // SPEC: "denied if the result would be below zero": 0 - 1 = -1 is below zero.
    const Limit limit = Make(Algorithm::token_bucket, MAX_UNITS, kHour, MAX_UNITS);
    const State empty{0, kT0};
    const Outcome out = Take(limit, &empty, kT0, 1);
    EXPECT_FALSE(out.allowed) << "balance after: " << out.balance;
}

TEST(ToleranceScale, WholeUnitsAtMaxUnitsCapacity) {
    // SPEC: whole_units is the floor of the balance: floor(0) = floor(0.5) = 0.
    const Limit limit = Make(Algorithm::token_bucket, MAX_UNITS, kHour, MAX_UNITS);
    EXPECT_EQ(whole_units(limit, 0.0), 0);
    EXPECT_EQ(whole_units(limit, 0.5), 0);
    EXPECT_EQ(whole_units(limit, 41.5), 41);
}

TEST(ToleranceScale, EmptyKeyAtTinyCapacityDenies) {
    // SPEC VIOLATION (kept failing on purpose): capacity 1e-9 is valid ("finite, > 0"); from an empty key
    // a request for the whole capacity leaves -1e-9, below zero, and must be denied ("denied if the
    // result would be below zero"). tolerance() = 1e-9 + 1e-24 absorbs the whole shortfall, so it is
    // admitted (as debt): the key hands out twice its capacity in a burst at this scale.
    const Limit limit = Make(Algorithm::token_bucket, 1e-9, kSec, 1e-9);
    const State empty{0, kT0};
    const Outcome out = Take(limit, &empty, kT0, 1e-9);
    EXPECT_FALSE(out.allowed) << "balance after: " << out.balance;
}

// ---- Long runs against an exact model ---------------------------------------------------------------
//
// Costs are whole tenths of a unit and rates are integers, so the specification can be evaluated
// exactly in integers: a token bucket value is kept in units of 1 / (10 * period), a fixed window value
// in tenths. The model admits like the documented core (a shortfall below tolerance() is admitted and
// kept as debt). The core must take the same decisions, admit the same total to within one unit, and
// never admit more than capacity + rate * elapsed / period (fixed window: rate * boundaries crossed).

struct Run {
    const char *name;
    Algorithm algorithm;
    std::int64_t rate;  // units per period
    Micros period;
    std::int64_t capacity;
    int requests;
    std::uint64_t seed;
    Micros mean_gap;     // typical spacing: uniform in [0, 2 * mean_gap]
    double burst_share;  // share of requests right after the previous one (gap in [0, 1 ms])
    double idle_share;   // share of requests after a long idle (gap in [0, idle_max])
    Micros idle_max;
    double unit_share;  // share of requests costing exactly one unit; others 0.1 .. max_cost_tenths / 10
    std::int64_t max_cost_tenths;
    bool per_key_origin;  // fixed window: origin from the key hash instead of a start
};

struct RunResult {
    std::int64_t core_tenths = 0;   // admitted by the core
    std::int64_t model_tenths = 0;  // admitted by the exact model
    std::int64_t mismatches = 0;    // requests decided differently
    long double lost = 0;           // units the model lost to the capacity cap (key full while idle)
    Micros first = 0;
    Micros last = 0;
    std::int64_t windows = 0;  // fixed window: boundaries crossed between first and last
};

using Wide = __int128;

Wide FloorDiv(Wide a, Wide b) { return a / b - ((a % b != 0 && a < 0) ? 1 : 0); }

RunResult Simulate(const Run &run) {
    Limit limit = Make(run.algorithm, static_cast<double>(run.rate), run.period, static_cast<double>(run.capacity));
    Micros origin = 0;
    if (run.per_key_origin) {
        limit.has_start = false;
        origin = window_origin(limit, key_hash("tenant:17/user:4242", 19));
    }
    const bool bucket = run.algorithm == Algorithm::token_bucket;
    // Model scale: token bucket in 1 / (10 * period) units, fixed window in tenths.
    const Wide per_tenth = bucket ? Wide{run.period} : Wide{1};
    const Wide scale = 10 * per_tenth;
    const Wide capacity = Wide{run.capacity} * scale;
    const long double tol_scaled = static_cast<long double>(tolerance(limit)) * static_cast<long double>(scale);

    std::mt19937_64 rng(run.seed);
    std::uniform_real_distribution<double> share(0, 1);
    std::uniform_int_distribution<Micros> regular(0, 2 * run.mean_gap);
    std::uniform_int_distribution<Micros> burst(0, kMs);
    std::uniform_int_distribution<Micros> idle(0, run.idle_max);
    std::uniform_int_distribution<std::int64_t> tenths(1, run.max_cost_tenths);

    RunResult result;
    State state{};
    const State *stored = nullptr;
    Wide model = capacity;  // no row yet: full
    Micros model_ts = kT0;
    Micros now = kT0;
    result.first = now;

    auto model_level = [&](Micros t) {  // before the cap
        if (bucket) return model + Wide{t - model_ts} * run.rate * 10;
        const Wide crossed = FloorDiv(t - origin, run.period) - FloorDiv(model_ts - origin, run.period);
        return model + crossed * run.rate * 10;
    };
    auto step = [&](Micros t, std::int64_t cost_tenths) {
        const Wide uncapped = model_level(t);
        const Wide level = std::min(uncapped, capacity);
        const Wide cost = Wide{cost_tenths} * per_tenth;
        const Wide shortfall = cost - level;
        const bool model_allowed = shortfall <= 0 || static_cast<long double>(shortfall) < tol_scaled;
        if (model_allowed) {
            if (uncapped > capacity) result.lost += static_cast<long double>(uncapped - capacity) / scale;
            model = level - cost;
            model_ts = t;
            result.model_tenths += cost_tenths;
        }
        const Outcome out = request(limit, stored, t, static_cast<double>(cost_tenths) / 10.0, false, origin);
        if (out.allowed) {
            state = out.next;
            stored = &state;
            result.core_tenths += cost_tenths;
        }
        if (out.allowed != model_allowed) ++result.mismatches;
        return out.allowed || model_allowed;
    };

    for (int i = 0; i < run.requests; ++i) {
        if (i > 0) {
            const double kind = share(rng);
            if (kind < run.burst_share) {
                now += burst(rng);
            } else if (kind < run.burst_share + run.idle_share) {
                now += idle(rng);
            } else {
                now += regular(rng);
            }
        }
        step(now, share(rng) < run.unit_share ? 10 : tenths(rng));
    }
    // Drain what is left, so that less than a tenth of a unit remains: first the whole tenths the model
    // holds in one request, then tenth by tenth.
    const Wide left = std::min(model_level(now), capacity) / per_tenth;
    if (left > 0) step(now, static_cast<std::int64_t>(left));
    for (int k = 0; k < 20 && step(now, 1); ++k) {
    }
    result.last = now;
    result.windows = static_cast<std::int64_t>(FloorDiv(result.last - origin, run.period) -
                                               FloorDiv(result.first - origin, run.period));
    return result;
}

void CheckRun(const Run &run, bool expect_saturated) {
    const RunResult r = Simulate(run);
    SCOPED_TRACE(run.name);
    const long double core = r.core_tenths / 10.0L;
    const long double model = r.model_tenths / 10.0L;
    // The specification's upper bound over the whole run.
    const long double bound = run.algorithm == Algorithm::token_bucket
                                  ? run.capacity + static_cast<long double>(run.rate) * (r.last - r.first) / run.period
                                  : run.capacity + static_cast<long double>(run.rate) * r.windows;
    EXPECT_LE(core, bound + 1e-6L) << "admitted more than capacity + refill";
    EXPECT_LE(std::fabs(static_cast<double>(core - model)), 1.0)
        << "core " << static_cast<double>(core) << " model " << static_cast<double>(model);
    EXPECT_EQ(r.mismatches, 0);
    // No drift: everything that refilled and was not lost to the cap while full was admitted, to within
    // the last unit.
    EXPECT_GT(core, bound - r.lost - 1) << "bound " << static_cast<double>(bound) << " lost "
                                        << static_cast<double>(r.lost);
    if (expect_saturated) {
        // Demand exceeded supply throughout: the key (almost) never filled up, so the total is within a
        // unit or two of the plain bound capacity + rate * elapsed / period.
        EXPECT_LT(r.lost, 1.5L) << "test setup: the key filled up";
        EXPECT_GT(core, bound - 2.5L);
    }
    EXPECT_GT(r.core_tenths, 0);
}

TEST(LongRun, TokenBucketSaturatedThreeYears) {
    // 1 unit per minute, ~2M requests about 45 s apart (2.9 years): demand exceeds supply throughout.
    CheckRun({"saturated", Algorithm::token_bucket, 1, kMin, 30, 2'000'000, 1, 45 * kSec, 0, 0, 0, 1, 10, false}, true);
}

TEST(LongRun, TokenBucketAwkwardRateFractionalCosts) {
    // 7 units per 333 s, costs 0.1 .. 3.0, bursts and idle days, about 2.5 years.
    CheckRun({"awkward", Algorithm::token_bucket, 7, 333 * kSec, 13, 2'000'000, 2, 40 * kSec, 0.05, 0.001, kDay, 0.3,
              30, false},
             false);
}

TEST(LongRun, TokenBucketTenPerMinuteOftenFull) {
    // Supply exceeds typical demand: the key is often full, and capping must not drift either.
    CheckRun({"often-full", Algorithm::token_bucket, 10, kMin, 10, 2'000'000, 3, 47 * kSec, 0.2, 0.01, 6 * kHour, 0.9,
              50, false},
             false);
}

TEST(LongRun, TokenBucketBytesPerDay) {
    // Large units: 1e9 bytes per day, capacity 1e9, costs up to 1e5 bytes, about 3 weeks.
    CheckRun({"bytes", Algorithm::token_bucket, 1'000'000'000, kDay, 1'000'000'000, 1'000'000, 4, 2 * kSec, 0.1, 0, 0,
              0, 1'000'000, false},
             false);
}

TEST(LongRun, FixedWindowFivePerTwoMinutes) {
    CheckRun({"fw-5-per-2min", Algorithm::fixed_window, 5, 2 * kMin, 5, 3'000'000, 5, 20 * kSec, 0.1, 0.001, 12 * kHour,
              1, 10, false},
             false);
}

TEST(LongRun, FixedWindowPerKeyOriginFractional) {
    // 7 per hour, capacity 20, 1M requests about 7 minutes apart (13 years).
    CheckRun({"fw-hourly", Algorithm::fixed_window, 7, kHour, 20, 1'000'000, 6, 7 * kMin, 0.05, 0, 0, 0.2, 30, true},
             false);
}

}  // namespace
}  // namespace pg_ratelimit::core
