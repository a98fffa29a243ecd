// How the core fuzzer reads its input: a limit definition, then operations until the bytes run out.
// Every value is drawn through a "mode" byte, so that most inputs stay in the validated domain (nice
// values, log-uniform magnitudes, fractions of the capacity) while some are raw bit patterns (NaN,
// infinities, negatives, denormals, out-of-range periods and starts) that validation must reject.
#pragma once

#include <cfloat>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>

#include "algorithms_under_test.hpp"
#include "core/validate.hpp"

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

// A limit as rate_limit_define would receive it, not yet validated.
inline Limit limit(Bytes &in) {
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
    l.has_start = (flags & 1) != 0 && (algorithm.accepts_start || (flags & 0x0e) == 0x0e);
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
