// The first local day of a calendar window (core/calendar.hpp numbers windows from 2000-01-01: days; Monday
// 2000-01-03: weeks; January 2000: months), counted here by whole Gregorian years and a table of month
// lengths, independently of the core's 400-year eras, for the fuzzer to check the core's openings against.
#pragma once

#include "core/limit.hpp"

namespace pg_ratelimit::fuzz {

namespace calendar_dates_detail {

inline __int128 floor_div(__int128 a, __int128 b) {
    const __int128 quotient = a / b;
    return (a % b != 0 && (a < 0) != (b < 0)) ? quotient - 1 : quotient;
}

// Days from 0001-01-01 to January 1st of a proleptic Gregorian year (negative before year 1).
inline __int128 days_before_year(__int128 year) {
    const __int128 past = year - 1;
    return 365 * past + floor_div(past, 4) - floor_div(past, 100) + floor_div(past, 400);
}

inline bool leap(__int128 year) {
    return floor_div(year, 4) * 4 == year && (floor_div(year, 100) * 100 != year || floor_div(year, 400) * 400 == year);
}

// Days from 2000-01-01 to the first of a month.
inline __int128 first_of_month(__int128 year, int month) {
    static constexpr int kDaysBefore[] = {0, 31, 59, 90, 120, 151, 181, 212, 243, 273, 304, 334};
    const int leap_day = month > 2 && leap(year) ? 1 : 0;
    return days_before_year(year) - days_before_year(2000) + kDaysBefore[month - 1] + leap_day;
}

}  // namespace calendar_dates_detail

// The local day (since 2000-01-01) on which window `window` of a calendar begins.
inline __int128 first_day(const core::Calendar &calendar, __int128 window) {
    using calendar_dates_detail::floor_div;
    const __int128 units = window * calendar.count;
    switch (calendar.unit) {
        case core::CalendarUnit::week:
            return 2 + 7 * units;
        case core::CalendarUnit::month: {
            const __int128 year = 2000 + floor_div(units, 12);
            return calendar_dates_detail::first_of_month(year, static_cast<int>(units - (year - 2000) * 12) + 1);
        }
        case core::CalendarUnit::day:
        case core::CalendarUnit::none:
            break;
    }
    return units;
}

}  // namespace pg_ratelimit::fuzz
