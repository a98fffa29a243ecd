// Properties over random limits, states and request streams (seeded std::mt19937_64: deterministic), for
// every algorithm, and for fixed windows on a calendar (days, weeks or months in a time zone: test_zones.hpp):
// - admission bound: in any stretch of a stream, admitted units never exceed capacity + max_reserved +
//   refill (token bucket, GCRA and sliding window: rate * elapsed / period, so a sliding window, whose
//   capacity is its rate, admits at most rate + rate * elapsed / period; fixed window: rate * boundaries;
//   on a calendar, rate * the windows opening in the stretch);
// - retry_after: the same request succeeds at now + retry_after and not 1 us earlier; a reservation's debt
//   is repaid at now + retry_after and not earlier;
// - reset_after: the key is full at now + reset_after and not 1 us earlier;
// - what a call stores reads back as the balance it reports (the sliding window: up to one quantum less);
// - a clock stepping backwards mints nothing.
#include <gtest/gtest.h>

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

#include "core/algorithms.hpp"
#include "core/refill.hpp"
#include "core/validate.hpp"
#include "random_limits.hpp"
#include "support.hpp"

namespace pg_ratelimit::core {
namespace {

// What a suite draws its limits from: one algorithm's limits (RandomLimit), or calendar limits
// (RandomCalendarLimit, fixed windows).
struct Family {
    Algorithm algorithm;
    bool calendar;
};

// One seed per family and test, so that each draws its own cases.
std::uint64_t Seed(std::uint64_t base, Family family) {
    return base + 0x100 * static_cast<std::uint64_t>(family.algorithm) + (family.calendar ? 0x10000 : 0);
}

Keyed Draw(Random &random, Family family, bool allow_unlimited) {
    return family.calendar ? RandomCalendarLimit(random, allow_unlimited)
                           : RandomLimit(random, family.algorithm, allow_unlimited);
}

// floor((t - origin) / period)
Micros WindowIndex(Micros t, Micros origin, Micros period) {
    const Micros offset = t - origin;
    return offset / period - ((offset % period != 0 && offset < 0) ? 1 : 0);
}

// The most the algorithm adds to a key from `from` to `to` (on top of capacity + max_reserved): whole
// windows' rates for the fixed window (the windows opening in (from, to]: on a calendar, its local
// midnights, counted by their window numbers), continuous refill for the others.
long double Refill(const Keyed &s, Micros from, Micros to) {
    const Limit &l = s.limit;
    if (l.calendar.unit != CalendarUnit::none) {
        return static_cast<long double>(l.rate) *
               static_cast<long double>(calendar_index(l.calendar, to) - calendar_index(l.calendar, from));
    }
    if (l.algorithm == Algorithm::fixed_window) {
        return static_cast<long double>(l.rate) *
               static_cast<long double>(WindowIndex(to, s.origin, l.period) - WindowIndex(from, s.origin, l.period));
    }
    return static_cast<long double>(l.rate) * static_cast<long double>(to - from) / static_cast<long double>(l.period);
}

// The comparison of every decision (decision.cpp: covers): a shortfall within the tolerance counts as covered.
bool Covers(double balance, double units, double allowance) { return balance - units >= -allowance; }

// Whether `stored`, written by a call that reported `balance` for a key evaluated at `at`, holds that balance:
// token bucket and fixed window store {balance, at} itself; GCRA reads back within the tolerance, or a few
// ulps of the balance where that is far below zero (a clock stepped back far behind the theoretical arrival
// time); the sliding window up to one quantum less (StoreLoss), never more beyond the tolerance. Read back
// at `now`, the key is evaluated at the same instant as before the write.
::testing::AssertionResult Holds(const Keyed &s, const State &stored, double balance, Micros at, Micros now) {
    const Level back = LevelAt(s, stored, now);
    const double tol = tolerance(s.limit) + 8 * DBL_EPSILON * (std::fabs(balance) + s.limit.capacity);
    const bool stores_balance =
        s.limit.algorithm == Algorithm::token_bucket || s.limit.algorithm == Algorithm::fixed_window;
    bool ok = back.at == at && back.value <= balance + tol && back.value >= balance - StoreLoss(s.limit) - tol;
    // A calendar key keeps the opening of its window instead of the instant (fixed_window.cpp).
    const Calendar &calendar = s.limit.calendar;
    const Micros stored_at =
        calendar.unit == CalendarUnit::none ? at : calendar_start(calendar, calendar_index(calendar, at));
    if (stores_balance) ok = ok && stored.value == balance && stored.ts == stored_at;
    if (ok) return ::testing::AssertionSuccess();
    std::ostringstream out;
    out.precision(17);
    out << Describe(stored) << " reads back " << back.value << " at " << back.at << ", expected " << balance << " at "
        << at;
    return ::testing::AssertionFailure() << out.str();
}

// ---- Admission bound ----------------------------------------------------------------------------------

class AdmissionBound : public ::testing::TestWithParam<Family> {};

TEST_P(AdmissionBound, LimitsAreValid) {
    const Algorithm algorithm = GetParam().algorithm;
    Random random(Seed(0x5eed0000, GetParam()));
    for (int trial = 0; trial < 2000; ++trial) {
        const Keyed s = Draw(random, GetParam(), /*allow_unlimited=*/true);
        ASSERT_EQ(validate_limit(s.limit), LimitProblem::none) << Describe(s.limit, s.origin);
        if (!uses_window_grid(algorithm)) {
            ASSERT_EQ(s.origin, 0) << Describe(s.limit, s.origin);
        }
    }
}

TEST_P(AdmissionBound, AnyStretchOfARandomStream) {
    Random random(Seed(0x5eed0001, GetParam()));
    int stretches_at_bound = 0;
    for (int trial = 0; trial < 300; ++trial) {
        const Keyed s = Draw(random, GetParam(), /*allow_unlimited=*/false);
        const Limit &l = s.limit;
        const double unit_cost = RandomCost(random, l);
        // Mean spacing around the time one request's units take to refill, from 5x faster to 2x slower.
        const double refill_one = unit_cost / l.rate * static_cast<double>(l.period);
        const Micros mean_gap = static_cast<Micros>(std::min(refill_one * random.LogUniform(0.2, 2), 1e12));
        State state{};
        const State *stored = nullptr;
        Micros now = StreamStart(random, l);
        // refill(t): units added up to t, on the same axis for every stretch (relative to the first request).
        const Micros first = now;
        auto refill = [&](Micros t) { return Refill(s, first, t); };
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
    Random random(Seed(0x5eed0003, GetParam()));
    for (int trial = 0; trial < 300; ++trial) {
        const Keyed s = Draw(random, GetParam(), false);
        const Limit &l = s.limit;
        const double unit_cost = RandomCost(random, l);
        const double refill_one = unit_cost / l.rate * static_cast<double>(l.period);
        const Micros mean_gap = static_cast<Micros>(std::min(refill_one * random.LogUniform(0.2, 2), 1e12));
        State state{};
        const State *stored = nullptr;
        const Micros first = StreamStart(random, l);
        Micros now = first;
        Micros latest = first;
        long double admitted = 0;
        for (int i = 0; i < 2000; ++i) {
            if (i > 0) now = NextInstant(random, now, mean_gap, l.period);
            latest = std::max(latest, now);
            const bool reserve = l.max_reserved > 0 && random.Chance(0.3);
            const Outcome out = request(l, stored, now, unit_cost, reserve, s.origin);
            if (out.allowed) {
                admitted += unit_cost;
                state = out.next;
                stored = &state;
                // The key is never evaluated ahead of the real clock (whatever its ts encodes: GCRA's is
                // the theoretical arrival time, ahead of now by design).
                ASSERT_LE(LevelAt(s, state, now).at, latest) << Describe(l, s.origin) << " " << Describe(state);
            }
        }
        const long double slack = 2 * tolerance(l) + 1e-9 * (l.capacity + l.max_reserved);
        EXPECT_LE(admitted, l.capacity + l.max_reserved + Refill(s, first, latest) + slack)
            << "trial " << trial << ": " << Describe(l, s.origin);
    }
}

// ---- retry_after and reset_after --------------------------------------------------------------------------

struct Case {
    Keyed s;
    State stored;
    Micros written;  // the instant the stored state holds its balance at (stored.ts for balance encodings)
    Micros now;
    double cost;
    bool reserve;
};

Case RandomCase(Random &random, Family family) {
    Case c;
    c.s = Draw(random, family, /*allow_unlimited=*/true);
    const Limit &l = c.s.limit;
    const double debt = std::min(l.max_reserved, 3 * l.capacity) + (random.Chance(0.1) ? l.capacity : 0);
    c.cost = RandomCost(random, l);
    // Often just short of the cost, so that many requests are denied.
    const double high = random.Chance(0.5) ? c.cost : l.capacity;
    const double balance = random.Chance(0.1) ? l.capacity : random.Uniform(-debt, high);
    c.written = family.calendar ? CalendarInstant(random, l) : kT0 + random.Int(-kDay, kDay);
    c.stored = Encode(random, c.s, balance, c.written);
    const Micros fill = FillTime(l);
    if (random.Chance(0.2)) {
        c.now = c.written - random.Int(0, std::min<Micros>(10 * l.period, kYear));  // clock stepped back
    } else if (random.Chance(0.2)) {
        c.now = c.written;
    } else {
        c.now = c.written + random.Int(0, std::min<Micros>(fill, 1'000'000 * kSec));
    }
    c.reserve = random.Chance(0.5);
    return c;
}

std::string Describe(const Case &c) {
    std::ostringstream out;
    out.precision(17);
    out << Describe(c.s.limit, c.s.origin) << " " << Describe(c.stored) << " written=" << c.written << " now=" << c.now
        << " cost=" << c.cost << " reserve=" << c.reserve;
    return out.str();
}

Outcome Decide(const Case &c, Micros now) { return request(c.s.limit, &c.stored, now, c.cost, c.reserve, c.s.origin); }

// Whether a request for the whole capacity would be admitted: the key is full (is_full, reset_after).
bool FullAt(const Keyed &s, const State &state, Micros t) {
    return admits(s.limit, &state, t, s.limit.capacity, /*reserve=*/false, s.origin);
}

class Durations : public ::testing::TestWithParam<Family> {};

TEST_P(Durations, DeniedRequestSucceedsAtRetryAfter) {
    Random random(Seed(0xdead0001, GetParam()));
    int denied = 0;
    int failures = 0;
    for (int trial = 0; trial < 20000 && failures < 10; ++trial) {
        const Case c = RandomCase(random, GetParam());
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

// retry_after is the earliest microsecond: 1 us before it, the same request is still denied.
TEST_P(Durations, DeniedRequestStillDeniedJustBeforeRetryAfter) {
    Random random(Seed(0xdead0001, GetParam()));  // the same cases as above
    int checked = 0;
    int failures = 0;
    for (int trial = 0; trial < 20000 && failures < 10; ++trial) {
        const Case c = RandomCase(random, GetParam());
        const Outcome out = Decide(c, c.now);
        if (out.allowed || out.retry_after >= MAX_DURATION) continue;
        ++checked;
        const Outcome before = Decide(c, c.now + out.retry_after - 1);
        EXPECT_FALSE(before.allowed) << Describe(c) << " retry_after=" << out.retry_after
                                     << ": already allowed 1 us before";
        if (before.allowed) ++failures;
    }
    EXPECT_GT(checked, 3000);
}

TEST_P(Durations, RetryAfterOfAReservation) {
    const Algorithm algorithm = GetParam().algorithm;
    Random random(Seed(0xdead0003, GetParam()));
    int allowed = 0;
    int in_debt = 0;
    int failures = 0;
    for (int trial = 0; trial < 20000 && failures < 10; ++trial) {
        Case c = RandomCase(random, GetParam());
        c.reserve = true;
        const Outcome out = Decide(c, c.now);
        if (!out.allowed) continue;
        ++allowed;
        const double tol = tolerance(c.s.limit);
        const Micros at = LevelAt(c.s, c.stored, c.now).at;
        ::testing::AssertionResult holds = Holds(c.s, out.next, out.balance, at, c.now);
        bool ok = out.write && holds;
        if (out.balance >= -tol) {
            ok = ok && out.retry_after == 0;
        } else if (out.retry_after < MAX_DURATION) {
            ++in_debt;
            // Repaid at now + retry_after (within the rounding tolerance), and still in debt 1 us before.
            const Micros then = c.now + out.retry_after;
            ok = ok && out.retry_after > 0 && Covers(LevelAt(c.s, out.next, then).value, 0, tol);
            ok = ok && !Covers(LevelAt(c.s, out.next, then - 1).value, 0, tol);
        }
        EXPECT_TRUE(ok) << Describe(c) << " balance=" << out.balance << " retry_after=" << out.retry_after << " "
                        << holds.message();
        if (!ok) ++failures;
    }
    EXPECT_GT(allowed, 3000);
    if (algorithm == Algorithm::sliding_window) {
        EXPECT_EQ(in_debt, 0);  // max_reserved is 0: a sliding window never goes into debt
    } else {
        EXPECT_GT(in_debt, 2000);
    }
}

TEST_P(Durations, ResetAfter) {
    Random random(Seed(0xdead0005, GetParam()));
    int waits = 0;
    int failures = 0;
    for (int trial = 0; trial < 20000 && failures < 10; ++trial) {
        const Case c = RandomCase(random, GetParam());
        const Outcome out = Decide(c, c.now);
        const State after = out.allowed ? out.next : c.stored;
        bool ok = out.reset_after >= 0 && out.reset_after <= MAX_DURATION;
        if (out.reset_after == 0) {
            ok = ok && FullAt(c.s, after, c.now);
        } else if (out.reset_after < MAX_DURATION) {
            ++waits;
            // Full at now + reset_after (within the rounding tolerance), and not yet full 1 us before.
            ok = ok && FullAt(c.s, after, c.now + out.reset_after);
            ok = ok && !FullAt(c.s, after, c.now + out.reset_after - 1);
        }
        EXPECT_TRUE(ok) << Describe(c) << " allowed=" << out.allowed << " balance=" << out.balance
                        << " reset_after=" << out.reset_after;
        if (!ok) ++failures;
    }
    EXPECT_GT(waits, 10000);
}

TEST_P(Durations, RefundFields) {
    Random random(Seed(0xdead0007, GetParam()));
    int failures = 0;
    for (int trial = 0; trial < 20000 && failures < 10; ++trial) {
        const Case c = RandomCase(random, GetParam());
        const Outcome out = refund(c.s.limit, &c.stored, c.now, c.cost, c.s.origin);
        const Level level = LevelAt(c.s, c.stored, c.now);
        const double tol = tolerance(c.s.limit);
        const bool changed = out.next.value != c.stored.value || out.next.ts != c.stored.ts;
        ::testing::AssertionResult holds = Holds(c.s, out.next, out.balance, level.at, c.now);
        bool ok = out.allowed && out.write == changed && out.balance <= c.s.limit.capacity &&
                  out.balance == std::min(level.value + c.cost, c.s.limit.capacity) && holds;
        ok = ok && ((out.balance >= -tol) == (out.retry_after == 0));
        EXPECT_TRUE(ok) << Describe(c) << " balance=" << out.balance << " retry_after=" << out.retry_after << " "
                        << holds.message();
        if (!ok) ++failures;
    }
}

// ---- Clock stepping back -----------------------------------------------------------------------------------

TEST_P(Durations, EarlierThenOriginalNeverGivesMore) {
    Random random(Seed(0xdead0009, GetParam()));
    for (int trial = 0; trial < 2000; ++trial) {
        Case c = RandomCase(random, GetParam());
        c.cost = c.s.limit.capacity * random.LogUniform(0.01, 1);
        c.reserve = c.reserve && std::isfinite(c.s.limit.max_reserved);  // unlimited debt drains forever
        const Micros back = c.written - random.Int(1, std::min<Micros>(10 * c.s.limit.period, kYear));
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
        const double single = drain(once, c.written);
        State twice = c.stored;
        const double stepped_back = drain(twice, back);
        const double both = stepped_back + drain(twice, c.written);
        EXPECT_LE(both, single + 1e-9 * c.s.limit.capacity) << Describe(c) << " back=" << back;
    }
}

// A reservation bounded in time (reserve_within): admitted exactly when a reservation is due within
// max_wait; denied, it writes nothing, and the same call succeeds at now + retry_after and not 1 us earlier.
TEST_P(Durations, ReserveWithin) {
    Random random(Seed(0xdead0007, GetParam()));
    int allowed = 0;
    int denied = 0;
    int failures = 0;
    for (int trial = 0; trial < 20000 && failures < 10; ++trial) {
        const Case c = RandomCase(random, GetParam());
        const Micros max_wait = random.Chance(0.1) ? 0 : random.Int(0, FillTime(c.s.limit));
        const auto within = [&](Micros t) {
            return reserve_within(c.s.limit, &c.stored, t, c.cost, max_wait, c.s.origin);
        };
        const Outcome out = within(c.now);
        const Outcome reserved = request(c.s.limit, &c.stored, c.now, c.cost, /*reserve=*/true, c.s.origin);
        bool ok = true;
        if (out.allowed) {
            ++allowed;
            // Exactly the reservation request() makes.
            ok = out.retry_after <= max_wait && reserved.allowed && out.retry_after == reserved.retry_after &&
                 out.write == reserved.write && out.next.value == reserved.next.value &&
                 out.next.ts == reserved.next.ts;
        } else {
            ++denied;
            ok = !out.write && out.retry_after > 0 && out.retry_after <= MAX_DURATION &&
                 (!reserved.allowed || reserved.retry_after > max_wait);
            if (out.retry_after < MAX_DURATION) {
                ok = ok && within(c.now + out.retry_after).allowed;
                ok = ok && !within(c.now + out.retry_after - 1).allowed;
            }
        }
        EXPECT_TRUE(ok) << Describe(c) << " max_wait=" << max_wait << " allowed=" << out.allowed
                        << " retry_after=" << out.retry_after;
        if (!ok) ++failures;
    }
    EXPECT_GT(allowed, 1000);
    EXPECT_GT(denied, 1000);
}

// Without a bound, reserve_within is request(..., reserve = true).
TEST_P(Durations, ReserveWithinUnbounded) {
    Random random(Seed(0xdead0008, GetParam()));
    for (int trial = 0; trial < 5000; ++trial) {
        const Case c = RandomCase(random, GetParam());
        const Outcome a = reserve_within(c.s.limit, &c.stored, c.now, c.cost, MAX_DURATION, c.s.origin);
        const Outcome b = request(c.s.limit, &c.stored, c.now, c.cost, /*reserve=*/true, c.s.origin);
        ASSERT_TRUE(a.allowed == b.allowed && a.retry_after == b.retry_after && a.write == b.write &&
                    a.next.value == b.next.value && a.next.ts == b.next.ts)
            << Describe(c);
    }
}

// A function rather than a static generator: building one at static initialisation may throw.
auto EveryAlgorithm() {
    return ::testing::Values(Family{Algorithm::token_bucket, false}, Family{Algorithm::fixed_window, false},
                             Family{Algorithm::gcra, false}, Family{Algorithm::sliding_window, false},
                             Family{Algorithm::fixed_window, true});
}
std::string ParamName(const ::testing::TestParamInfo<Family> &info) {
    return info.param.calendar ? std::string("calendar_") + AlgorithmName(info.param.algorithm)
                               : AlgorithmName(info.param.algorithm);
}

INSTANTIATE_TEST_SUITE_P(EveryAlgorithm, AdmissionBound, EveryAlgorithm(), ParamName);
INSTANTIATE_TEST_SUITE_P(EveryAlgorithm, Durations, EveryAlgorithm(), ParamName);

}  // namespace
}  // namespace pg_ratelimit::core
