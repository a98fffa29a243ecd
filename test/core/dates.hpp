// Instants and wall-clock times written as dates, for tests that state expected values by hand, and the
// floor division that day counts need. Computed with glibc's timegm, independently of the core's date
// arithmetic (core/calendar.hpp).
#pragma once

#include <time.h>

#include <cstdint>

#include "core/limit.hpp"

namespace pg_ratelimit::core {

// Seconds from 1970-01-01 (Unix) to 2000-01-01 (PostgreSQL's epoch, the core's).
constexpr std::int64_t kUnixToPostgresSeconds = 946684800;
// PostgreSQL's first timestamp, 4714-11-24 00:00 UTC BC (datatype/timestamp.h: MIN_TIMESTAMP).
constexpr Micros kPgMinTimestamp = -211813488000000000;

// floor(a / b) and the remainder that goes with it, for any signs.
inline std::int64_t FloorDiv(std::int64_t a, std::int64_t b) {
    return a / b - ((a % b != 0 && (a < 0) != (b < 0)) ? 1 : 0);
}
inline std::int64_t FloorMod(std::int64_t a, std::int64_t b) { return a - FloorDiv(a, b) * b; }

// Seconds from 2000-01-01 00:00 UTC to a UTC date and time. Fields out of range carry over as timegm makes
// them (month 13 is January of the next year).
inline std::int64_t SecondsAt(std::int64_t year, std::int64_t month, int day, int hour = 0, int minute = 0,
                              int second = 0) {
    struct tm fields {};
    fields.tm_year = static_cast<int>(year - 1900);
    fields.tm_mon = static_cast<int>(month - 1);
    fields.tm_mday = day;
    fields.tm_hour = hour;
    fields.tm_min = minute;
    fields.tm_sec = second;
    return static_cast<std::int64_t>(timegm(&fields)) - kUnixToPostgresSeconds;
}

// The instant of a UTC date and time, in microseconds since 2000-01-01 00:00 UTC (within about 292,000
// years of 2000).
inline Micros UtcAt(std::int64_t year, std::int64_t month, int day, int hour = 0, int minute = 0, int second = 0) {
    return SecondsAt(year, month, day, hour, minute, second) * 1000000;
}

// A time on a zone's wall clock, as the core counts local times: microseconds since 2000-01-01 00:00 on
// that wall clock.
inline Micros WallClock(std::int64_t year, std::int64_t month, int day, int hour = 0, int minute = 0, int second = 0) {
    return UtcAt(year, month, day, hour, minute, second);
}

// Days from 2000-01-01 to a date.
inline std::int64_t DayNumber(std::int64_t year, std::int64_t month, int day) {
    return SecondsAt(year, month, day) / 86400;
}

}  // namespace pg_ratelimit::core
