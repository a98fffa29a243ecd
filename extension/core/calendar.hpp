// Calendar windows: fixed windows of whole days, weeks or months that open at local midnight in a time
// zone, right across daylight-saving changes and months of 28 to 31 days.
//
// The core knows no time zone database: the glue hands it a TimeZone, two functions over PostgreSQL's
// (extension/time_zones.cpp), and the core does the calendar arithmetic. Local times are microseconds
// since 2000-01-01 00:00 on the zone's wall clock, like PostgreSQL's timestamp (without time zone).
//
// Window k of a calendar opens at local midnight of its first day, at the instant B(k) the zone maps that
// local time to: a midnight that a daylight-saving gap skips is read with the offset before the gap (the
// end of the gap when the gap starts at midnight, as everywhere so far), and one that a fall-back repeats
// maps to its later occurrence (PostgreSQL's rule, the instant of `timestamp '...' AT TIME ZONE zone`). An instant t is
// in the window k with B(k) <= t < B(k + 1). Windows are numbered from 2000-01-01 (days; months: from January 2000) and
// from Monday 2000-01-03 (weeks), so '3 months' are calendar quarters and '2 weeks' start on every other Monday.
#pragma once

#include <cstdint>

#include "core/limit.hpp"  // TimeZone, CalendarUnit, Calendar

namespace pg_ratelimit::core {

// The most units of a calendar period: about 100 years.
inline constexpr std::int32_t MAX_CALENDAR_DAYS = 36600;
inline constexpr std::int32_t MAX_CALENDAR_WEEKS = 5220;
inline constexpr std::int32_t MAX_CALENDAR_MONTHS = 1200;

// A calendar period's nominal length (30-day months, 7-day weeks, 24-hour days): what Limit::period holds
// for a calendar limit, where only its bounds are checked; the windows themselves are the calendar's.
// Saturates at MAX_PERIOD + 1.
[[nodiscard]] Micros calendar_nominal_period(CalendarUnit unit, std::int32_t count) noexcept;

// The window containing t, and the instant window k opens (saturating at the int64 limits).
using CalendarIndex = __int128;
[[nodiscard]] CalendarIndex calendar_index(const Calendar &calendar, Micros t) noexcept;
[[nodiscard]] Micros calendar_start(const Calendar &calendar, CalendarIndex index) noexcept;

// Proleptic Gregorian dates as days since 2000-01-01, and back (exposed for the tests).
struct CivilDate {
    std::int64_t year;
    int month;  // 1..12
    int day;    // 1..31
};
[[nodiscard]] std::int64_t days_from_civil(std::int64_t year, int month, int day) noexcept;
[[nodiscard]] CivilDate civil_from_days(std::int64_t days) noexcept;

}  // namespace pg_ratelimit::core
