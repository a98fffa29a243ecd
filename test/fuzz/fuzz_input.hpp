// How the core fuzzer reads its input: a limit definition, then operations until the bytes run out.
// Every value is drawn through a "mode" byte, so that most inputs stay in the validated domain (nice
// values, log-uniform magnitudes, fractions of the capacity) while some are raw bit patterns (NaN,
// infinities, negatives, denormals, out-of-range periods and starts) that validation must reject.
#pragma once

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>

#include "algorithms_under_test.hpp"
#include "core/calendar.hpp"
#include "core/validate.hpp"
#include "fuzz_zones.hpp"

namespace pg_ratelimit::fuzz {

inline constexpr Micros kSec = 1000000;
inline constexpr Micros kDay = 86400 * kSec;
inline constexpr Micros kYear = 365 * kDay;
// About mid-2024 in PostgreSQL's epoch (2000-01-01), where most runs start.
inline constexpr Micros kT0 = Micros{770'000'000} * kSec;
// PostgreSQL's TimestampTz range (datatype/timestamp.h): the clock never leaves it.
inline constexpr Micros kPgMinTimestamp = -211813488000000000;
inline constexpr Micros kPgEndTimestamp = 9223371331200000000;  // exclusive
inline constexpr double kInf = std::numeric_limits<double>::infinity();

// Reads front to back; once the bytes run out every read returns 0, so any prefix of an input is an
// input too (libFuzzer's mutations and -merge minimisation rely on that).
class Bytes {
  public:
    Bytes(const std::uint8_t *data, std::size_t size) : data_(data), size_(size) {}
    [[nodiscard]] bool empty() const { return pos_ >= size_; }
    std::uint8_t u8() { return pos_ < size_ ? data_[pos_++] : 0; }
    std::uint64_t bits(int count) {  // little endian, `count` bytes
        std::uint64_t value = 0;
        for (int i = 0; i < count; ++i) value |= std::uint64_t{u8()} << (8 * i);
        return value;
    }
    std::uint16_t u16() { return static_cast<std::uint16_t>(bits(2)); }
    std::uint32_t u32() { return static_cast<std::uint32_t>(bits(4)); }
    std::int64_t i64() { return static_cast<std::int64_t>(bits(8)); }
    double f64() {  // any bit pattern
        const std::uint64_t raw = bits(8);
        double value = 0;
        std::memcpy(&value, &raw, sizeof value);
        return value;
    }
    template <typename T, std::size_t N>
    const T &pick(const T (&table)[N]) {
        return table[u8() % N];
    }

  private:
    const std::uint8_t *data_;
    std::size_t size_;
    std::size_t pos_ = 0;
};

// 10^x for x uniform in [lo, hi] (32 bits of resolution, so exact edge values are reachable).
inline double log_uniform(Bytes &in, double lo, double hi) {
    return std::pow(10.0, lo + (hi - lo) * static_cast<double>(in.u32()) / 4294967295.0);
}

// Rates, capacities, costs and debts: any positive finite double up to MAX_UNITS is valid.
inline double units(Bytes &in) {
    static constexpr double kNice[] = {1,
                                       2,
                                       3,
                                       5,
                                       10,
                                       60,
                                       100,
                                       120,
                                       1000,
                                       3600,
                                       0.1,
                                       0.5,
                                       0.7,
                                       1.0 / 3.0,
                                       1e-9,
                                       1e-6,
                                       1e-3,
                                       1e6,
                                       1e9,
                                       1e12,
                                       999999999999.9999,
                                       1e-300,
                                       DBL_MIN,
                                       DBL_TRUE_MIN,  // valid but extreme
                                       0,
                                       -1,
                                       1e12 + 1};  // invalid
    switch (in.u8() % 8) {
        case 0:
            return in.f64();
        case 1:
            return in.pick(kNice);
        case 2:
            return std::round(log_uniform(in, 0, 12));
        case 3:
        case 4:
            return log_uniform(in, -9, 12);
        case 5:
            return 1.0 + in.u8();
        case 6:
            return std::ldexp(1.0 + in.u16() / 65536.0, in.u8() % 80 - 40);  // binary fractions
        default:
            return 1.0 + in.u32();
    }
}

inline Micros period(Bytes &in) {
    static constexpr Micros kNice[] = {1,
                                       2,
                                       7,
                                       1000,
                                       kSec,
                                       60 * kSec,
                                       3600 * kSec,
                                       kDay,
                                       7 * kDay,
                                       30 * kDay,
                                       kYear,
                                       core::MAX_PERIOD,
                                       core::MAX_PERIOD + 1,
                                       0,
                                       -1};  // the last three are invalid
    switch (in.u8() % 6) {
        case 0:
            return in.i64();
        case 1:
            return in.pick(kNice);
        case 2:
        case 3:
            return std::min(static_cast<Micros>(log_uniform(in, 0, 15.5)), core::MAX_PERIOD);
        case 4:
            return 1 + in.u16();
        default:
            return kSec * (1 + in.u16());
    }
}

inline double capacity(Bytes &in, double rate) {
    switch (in.u8() % 4) {
        case 0:
            return rate;  // rate_limit_define's default
        case 1:
            return units(in);
        case 2:
            return rate * std::pow(10.0, (in.u8() - 128) / 32.0);
        default:
            return rate * (1 + in.u8());
    }
}

inline double max_reserved(Bytes &in, double capacity) {
    switch (in.u8() % 6) {
        case 0:
            return 0;
        case 1:
            return kInf;  // rate_limit_define's default: unlimited
        case 2:
            return capacity * in.u8() / 64.0;
        case 3:
            return units(in);
        case 4:
            return in.f64();
        default:
            return capacity * (1 + in.u8());
    }
}

inline Micros start(Bytes &in) {
    switch (in.u8() % 4) {
        case 0:
            return kT0 + static_cast<std::int32_t>(in.u32()) * kSec;
        case 1:
            return in.i64();
        case 2:
            return (in.u8() % 2 == 0 ? 1 : -1) * (core::MAX_START_OFFSET - 4 + in.u8() % 8);  // at the edges
        default:
            return static_cast<std::int16_t>(in.u16());
    }
}

// Jitter from the high bits of the limit's flags byte (no byte of its own, so that inputs written before
// jitter existed decode as they did): mostly none, sometimes at and beyond both bounds.
inline Micros jitter(std::uint8_t flags) {
    switch (flags >> 4) {
        case 10:
            return 1;
        case 11:
            return kSec;
        case 12:
            return core::MAX_JITTER;
        case 13:
            return core::MAX_JITTER + 1;  // invalid
        case 14:
            return -1;  // invalid
        default:
            return 0;
    }
}

// Seconds east of UTC, within 15 hours: common and odd offsets, or any.
inline std::int64_t utc_offset(Bytes &in) {
    static constexpr std::int64_t kOffsets[] = {0,
                                                3600,
                                                7200,
                                                -18000,
                                                -36000,
                                                19800 /* +05:30 */,
                                                20700 /* +05:45 */,
                                                50400,
                                                -43200,
                                                49500 /* +13:45 */,
                                                -12600 /* -03:30 */,
                                                -34200 /* -09:30 */,
                                                54000,
                                                -54000,
                                                561 /* Paris's mean time until 1911 */};
    if (in.u8() % 2 == 0) return in.pick(kOffsets);
    return static_cast<std::int64_t>(in.u32() % 108001) - 54000;
}

// A calendar's time zone, into `zone` (fuzz_zones.hpp): half of them fixed offsets, half alternating between
// two offsets up to 24 hours apart at changes 49 hours to 400 days apart, the first change mostly at a local
// midnight (of the offset before it), or a few hours or a day off it, near 2024 or anywhere.
inline void time_zone(Bytes &in, FuzzZone &zone) {
    if (in.u8() % 2 == 0) {
        zone.set_fixed(utc_offset(in));
        return;
    }
    static constexpr std::int64_t kJumps[] = {3600, -3600, 1800, -1800, 7200, 1200, 86400, -86400};
    constexpr std::int64_t kHour = 3600;
    constexpr std::int64_t kDaySeconds = 86400;
    static constexpr std::int64_t kSpacings[] = {49 * kHour, 7 * kDaySeconds, 30 * kDaySeconds,
                                                 182 * kDaySeconds + 12 * kHour, 31556952};
    static constexpr std::int64_t kShifts[] = {0, 0, 0, 1, -1, 3600, -3600, 1800, 82800, 86400, -86400};
    constexpr std::int64_t kMostOffset = 54000;
    const std::int64_t second = utc_offset(in);  // in force before the first change
    const std::int64_t jump = in.u8() % 2 == 0 ? in.pick(kJumps) : static_cast<std::int64_t>(in.u32() % 172801) - 86400;
    std::int64_t first = second + jump;
    if (first > kMostOffset || first < -kMostOffset) first = second - jump;
    first = std::clamp(first, -kMostOffset, kMostOffset);  // the jump only shrinks
    const std::int64_t spacing =
        in.u8() % 2 == 0 ? in.pick(kSpacings) : 49 * kHour + static_cast<std::int64_t>(in.u32() % (400 * kDaySeconds));
    const std::int64_t day = in.u8() % 2 == 0 ? 8700 + in.u16() % 1024 : static_cast<std::int32_t>(in.u32());
    const std::int64_t shift = in.u8() % 2 == 0 ? in.pick(kShifts) : static_cast<std::int64_t>(in.u32() % 86400);
    zone.set_alternating(first, second, day * kDaySeconds - second + shift, spacing);
}

// A calendar (core/calendar.hpp) as rate_limit_define builds one from a period and a time zone: days, weeks
// or months, mostly a valid count, sometimes at or beyond its bounds; the zone decoded into `zone` (1 in 32:
// none, which validation rejects).
inline core::Calendar calendar(Bytes &in, FuzzZone &zone) {
    using core::CalendarUnit;
    static constexpr CalendarUnit kUnits[] = {CalendarUnit::day, CalendarUnit::week, CalendarUnit::month};
    static constexpr std::int32_t kCounts[] = {1, 1, 1, 2, 3, 7, 12, 4};
    static constexpr std::int32_t kEdges[] = {0,
                                              -1,
                                              core::MAX_CALENDAR_DAYS,
                                              core::MAX_CALENDAR_DAYS + 1,
                                              core::MAX_CALENDAR_WEEKS,
                                              core::MAX_CALENDAR_WEEKS + 1,
                                              core::MAX_CALENDAR_MONTHS,
                                              core::MAX_CALENDAR_MONTHS + 1,
                                              std::numeric_limits<std::int32_t>::max()};
    core::Calendar c;
    c.unit = in.pick(kUnits);
    switch (in.u8() % 4) {
        case 0:
        case 1:
            c.count = in.pick(kCounts);
            break;
        case 2:
            c.count = in.pick(kEdges);
            break;
        default:
            c.count = 1 + in.u16() % 1300;
    }
    if (in.u8() % 32 == 0) return c;  // no zone
    time_zone(in, zone);
    c.zone = &zone.zone();
    return c;
}

// A limit as rate_limit_define would receive it, not yet validated. A calendar limit's zone is decoded into
// `zone`.
inline Limit limit(Bytes &in, FuzzZone &zone) {
    Limit l;
    const AlgorithmUnderTest &algorithm = in.pick(kAlgorithms);
    l.algorithm = algorithm.algorithm;
    const bool constrained = algorithm.capacity_is_rate || algorithm.no_reservations || algorithm.min_period > 1;
    // An algorithm with constraints of its own (the sliding window) mostly gets a limit that meets them, so
    // that most of its runs pass validation; otherwise whatever the generic draws give (mostly refused).
    if (constrained && in.u8() % 8 != 0) {
        l.rate = units(in);
        l.period = period(in);
        if (l.period > 0 && l.period < algorithm.min_period) l.period += algorithm.min_period - 1;
        l.capacity = algorithm.capacity_is_rate ? l.rate : capacity(in, l.rate);
        l.max_reserved = algorithm.no_reservations ? 0 : max_reserved(in, l.capacity);
    } else {
        l.rate = units(in);
        l.period = period(in);
        l.capacity = capacity(in, l.rate);
        l.max_reserved = max_reserved(in, l.capacity);
    }
    const std::uint8_t flags = in.u8();
    // A start on an algorithm without a grid is rare (validation must reject it).
    const bool start_drawn = (flags & 1) != 0 && (algorithm.accepts_start || (flags & 0x0e) == 0x0e);
    // A calendar period for an eighth of the fixed windows, and rarely for other algorithms (validation rejects
    // those; the rare start above never comes with it, validation must meet that alone). Its period is the
    // nominal one, as the glue sets it; a start with it is rare (validation rejects that too).
    const bool on_calendar = algorithm.accepts_calendar ? (flags & 0x0e) == 0x06 : (flags & 0x0f) == 0x0a;
    if (on_calendar) {
        l.calendar = calendar(in, zone);
        l.period = core::calendar_nominal_period(l.calendar.unit, l.calendar.count);
        l.has_start = (flags & 0xf1) == 0xf1;
    } else {
        l.has_start = start_drawn;
    }
    if (l.has_start) l.start = start(in);
    l.jitter = jitter(flags);
    return l;
}

inline double cost(Bytes &in, const Limit &limit) {
    static constexpr double kNice[] = {1, 2, 0.1, 0.5, 1.0 / 3.0, 10, 100, 1e-9, 1e-12, DBL_TRUE_MIN, 1e12};
    const double cap = limit.capacity;
    switch (in.u8() % 9) {
        case 0:
            return in.f64();
        case 1:
        case 2:
            return cap;
        case 3:
            return cap * (in.u16() + 1) / 65536.0;
        case 4:
            return cap * std::pow(10.0, -12.0 * in.u8() / 255.0);
        case 5:
            return in.pick(kNice);
        case 6:
            return cap * (1 + (in.u8() - 128) * 1e-15);  // around capacity + tolerance
        case 7:
            return 1.0 + in.u8();
        default:
            return units(in);
    }
}

// The first instant: mostly a realistic one; sometimes anywhere in PostgreSQL's range, or at its ends.
inline Micros first_instant(Bytes &in) {
    switch (in.u8() % 4) {
        case 0:
        case 1:
            return kT0 + in.u32();
        case 2: {
            const auto span = static_cast<unsigned __int128>(static_cast<__int128>(kPgEndTimestamp) - kPgMinTimestamp);
            return static_cast<Micros>(kPgMinTimestamp + static_cast<__int128>(in.bits(8) % span));
        }
        default:
            return in.u8() % 2 == 0 ? kPgMinTimestamp + in.u32() : kPgEndTimestamp - 1 - in.u32();
    }
}

// How far the clock moves: microseconds, fractions of the period, or anything up to ~30,000 years.
inline Micros clock_move(Bytes &in, const Limit &limit) {
    switch (in.u8() % 4) {
        case 0:
            return in.u16();
        case 1:
            return static_cast<Micros>(static_cast<long double>(limit.period) * in.u16() / 4096.0L);
        case 2:
            return static_cast<Micros>(log_uniform(in, 0, 18));
        default:
            return static_cast<Micros>(in.u32()) * kSec;
    }
}

}  // namespace pg_ratelimit::fuzz
