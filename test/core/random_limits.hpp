// Random valid limits, costs and stored states for the property suites (seeded std::mt19937_64, so every
// run draws the same cases). Every algorithm gets limits it accepts: a sliding window's capacity is its
// rate, it takes no reservations and its period is at least MIN_SLIDING_PERIOD. Calendar limits (fixed
// windows of days, weeks or months in a time zone) come from RandomCalendarLimit, in the test zones.
#pragma once

#include <algorithm>
#include <cmath>
#include <iterator>
#include <limits>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "core/algorithms.hpp"
#include "core/calendar.hpp"
#include "core/refill.hpp"
#include "dates.hpp"
#include "support.hpp"
#include "test_zones.hpp"

namespace pg_ratelimit::core {

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

// The clock of a request stream after `now`: 15% of the time it steps back (by up to five gaps or
// periods), 30% it stays, else it moves on by up to two mean gaps.
inline Micros NextInstant(Random &random, Micros now, Micros mean_gap, Micros period) {
    if (random.Chance(0.15)) return now - random.Int(0, 5 * std::max(mean_gap, period));  // the clock steps back
    if (!random.Chance(0.3)) return now + random.Int(0, 2 * mean_gap);
    return now;
}

// A limit and the grid origin of the key under test (window_origin: 0 for algorithms without a grid).
struct Keyed {
    Limit limit;
    Micros origin = 0;
};

inline const char *UnitName(CalendarUnit unit) {
    switch (unit) {
        case CalendarUnit::day:
            return "days";
        case CalendarUnit::week:
            return "weeks";
        case CalendarUnit::month:
            return "months";
        case CalendarUnit::none:
            break;
    }
    return "none";
}

inline std::string Describe(const Limit &l, Micros origin) {
    std::ostringstream out;
    out.precision(17);
    out << AlgorithmName(l.algorithm) << " rate=" << l.rate << " period=" << l.period << " capacity=" << l.capacity
        << " max_reserved=" << l.max_reserved << " origin=" << origin;
    if (l.calendar.unit != CalendarUnit::none) {
        out << " calendar=" << l.calendar.count << " " << UnitName(l.calendar.unit) << " in "
            << ZoneName(l.calendar.zone);
    }
    return out.str();
}

inline std::string Describe(const State &s) {
    std::ostringstream out;
    out.precision(17);
    out << "stored={" << s.value << ", " << s.ts << "}";
    return out.str();
}

// A random valid limit. Rates from 1e-3 to 1e6 per period, periods from 1 us (sliding window: 1 ms) to 30
// days, capacity from 1/30 to 30 times the rate (sliding window: the rate).
inline Keyed RandomLimit(Random &random, Algorithm algorithm, bool allow_unlimited) {
    const bool sliding = algorithm == Algorithm::sliding_window;
    Keyed s;
    Limit &l = s.limit;
    l.algorithm = algorithm;
    l.rate = random.LogUniform(1e-3, 1e6);
    if (random.Chance(0.3)) l.rate = std::round(std::max(1.0, l.rate));  // integral rates are common
    const double shortest = sliding ? static_cast<double>(MIN_SLIDING_PERIOD) : 1.0;
    l.period = static_cast<Micros>(random.LogUniform(shortest, 30.0 * kDay));
    if (sliding && random.Chance(0.1)) l.period = MIN_SLIDING_PERIOD;  // the shortest valid one
    l.capacity = std::clamp(l.rate * random.LogUniform(1.0 / 30, 30), 1e-3, 1e12);
    if (sliding || random.Chance(0.2)) l.capacity = l.rate;
    const double kind = random.Uniform(0, 1);
    if (sliding || kind < 0.4) {
        l.max_reserved = 0;
    } else if (kind < 0.8 || !allow_unlimited) {
        l.max_reserved = l.capacity * random.Uniform(0, 3);
    } else {
        l.max_reserved = kInf;
    }
    if (uses_window_grid(algorithm) && random.Chance(0.5)) {
        l.has_start = true;
        l.start = kT0 + random.Int(-10 * kYear, 10 * kYear);
    }
    s.origin = window_origin(l, static_cast<std::uint64_t>(random.Int(0, std::numeric_limits<Micros>::max())));
    return s;
}

// A random calendar limit: rate, capacity and reservations as RandomLimit draws them for a fixed window, on
// windows of 1, 2, 3 or 7 days, 1 or 2 weeks, 1, 3 or 12 months (now and then any count up to a century), in
// one of the test zones. The key's origin stays whatever RandomLimit drew: a calendar ignores it.
inline Keyed RandomCalendarLimit(Random &random, bool allow_unlimited) {
    struct Choice {
        CalendarUnit unit;
        std::int32_t count;
    };
    static constexpr Choice kChoices[] = {
        {CalendarUnit::day, 1},   {CalendarUnit::day, 2},   {CalendarUnit::day, 3},
        {CalendarUnit::day, 7},   {CalendarUnit::week, 1},  {CalendarUnit::week, 2},
        {CalendarUnit::month, 1}, {CalendarUnit::month, 3}, {CalendarUnit::month, 12}};
    Keyed s = RandomLimit(random, Algorithm::fixed_window, allow_unlimited);
    Limit &l = s.limit;
    Choice choice = kChoices[random.Int(0, static_cast<Micros>(std::size(kChoices)) - 1)];
    if (random.Chance(0.03)) {
        const std::int32_t most = choice.unit == CalendarUnit::month  ? MAX_CALENDAR_MONTHS
                                  : choice.unit == CalendarUnit::week ? MAX_CALENDAR_WEEKS
                                                                      : MAX_CALENDAR_DAYS;
        choice.count = static_cast<std::int32_t>(random.Int(1, most));
    }
    const std::vector<NamedZone> &zones = TestZones();
    l.calendar = {choice.unit, choice.count, zones[random.Int(0, static_cast<Micros>(zones.size()) - 1)].zone};
    l.period = calendar_nominal_period(choice.unit, choice.count);
    l.has_start = false;
    l.start = 0;
    return s;
}

// The first offset change of a zone after t, within about a year (to the second); t if there is none.
inline Micros NextOffsetChange(const TimeZone &zone, Micros t) {
    const Micros offset = zone.offset_at(zone, t);
    for (Micros probe = t + kDay; probe <= t + 400 * kDay; probe += kDay) {
        if (zone.offset_at(zone, probe) == offset) continue;
        Micros lo = probe - kDay;  // the change is in (lo, hi]
        Micros hi = probe;
        while (hi - lo > kSec) {
            const Micros mid = lo + (hi - lo) / 2;
            (zone.offset_at(zone, mid) == offset ? lo : hi) = mid;
        }
        return hi;
    }
    return t;
}

// Where the requests of a calendar limit start: anywhere from 1990 to 2040, half the time just before one of
// its zone's offset changes (São Paulo's midnights until 2018, Apia's lost day, the springs and autumns
// of the others), so that streams cross openings that daylight saving moves.
inline Micros CalendarInstant(Random &random, const Limit &l) {
    const Micros t = random.Int(UtcAt(1990, 1, 1), UtcAt(2040, 1, 1));
    if (random.Chance(0.5)) return t;
    return NextOffsetChange(*l.calendar.zone, t) - random.Int(0, 2 * kDay);
}

// Where a stream of requests starts: about mid-2024 for plain limits, CalendarInstant for calendars.
inline Micros StreamStart(Random &random, const Limit &l) {
    if (l.calendar.unit == CalendarUnit::none) return kT0 + random.Int(0, kDay);
    return CalendarInstant(random, l);
}

inline double RandomCost(Random &random, const Limit &l) {
    const double kind = random.Uniform(0, 1);
    if (kind < 0.1) return l.capacity;
    if (kind < 0.4 && l.capacity >= 1) return 1;
    return l.capacity * random.LogUniform(1e-3, 1);
}

// The most a key can need to become full again from empty (no debt), bounded to keep sums far from the
// int64 limits: capacity / rate periods of continuous refill, whole windows for the fixed window, and for
// the sliding window the rest of the current window plus the next one, over which the count drains.
inline Micros FillTime(const Limit &l) {
    double periods = l.capacity / l.rate;
    if (l.algorithm == Algorithm::fixed_window) periods = std::ceil(periods);
    if (l.algorithm == Algorithm::sliding_window) periods = 2;
    double longest = static_cast<double>(l.period);
    if (l.calendar.unit != CalendarUnit::none) {  // the longest window: 31-day months, a day skipped or repeated
        const double days = l.calendar.unit == CalendarUnit::month ? 31 : l.calendar.unit == CalendarUnit::week ? 7 : 1;
        longest = (days * l.calendar.count + 1) * static_cast<double>(kDay);
    }
    return static_cast<Micros>(std::min(periods * longest, 1e15)) + 1;
}

// The balance of a stored key at now, and the instant it is evaluated at.
inline Level LevelAt(const Keyed &s, const State &state, Micros now) {
    return rules_of(s.limit.algorithm).level(s.limit, state, now, s.origin);
}

// The stored state of a key holding `balance` (<= capacity) at `at`, in the algorithm's own encoding
// (refill.hpp: store). A sliding window key also gets a random count in its previous window, so that both
// of its counts are exercised; what the balance leaves over is counted in the current window, or, if the
// previous window alone leaves less, the previous window's count is refunded down to it.
inline State Encode(Random &random, const Keyed &s, double balance, Micros at) {
    const RefillRules &rules = rules_of(s.limit.algorithm);
    if (s.limit.algorithm != Algorithm::sliding_window) {
        return rules.store(s.limit, nullptr, Level{balance, at}, balance, s.origin);
    }
    const Wide window = window_index(at, s.origin, s.limit.period);
    const double previous = random.Chance(0.3) ? 0.0 : s.limit.capacity * random.Uniform(0, 1);
    const State before{previous, window_start(window - 1, s.origin, s.limit.period)};
    return rules.store(s.limit, &before, rules.level(s.limit, before, at, s.origin), balance, s.origin);
}

// The most a stored balance may read back below what was stored: the sliding window keeps its previous
// window's count in whole quanta of 1 / K units, rounded up (sliding_window.cpp), K = floor((period - 1) /
// capacity) quanta per unit, or (period - 1) / capacity when that is below 1. The other algorithms keep
// balances to float rounding.
inline double StoreLoss(const Limit &l) {
    if (l.algorithm != Algorithm::sliding_window) return 0;
    const double per_unit = static_cast<double>(l.period - 1) / l.capacity;
    return 1 / (per_unit >= 1 ? std::floor(per_unit) : per_unit);
}

}  // namespace pg_ratelimit::core
