// Calendar windows (calendar.hpp): local dates from day counts and back, and the window of an instant.
#include "core/calendar.hpp"

#include <algorithm>
#include <iterator>
#include <limits>

#include "core/refill.hpp"  // saturating_add

namespace pg_ratelimit::core {
namespace {

constexpr Micros DAY = Micros{86400} * 1000000;
// 2000-01-01 was a Saturday: the first Monday is day 2.
constexpr std::int64_t FIRST_MONDAY = 2;
// Local day counts beyond this (about 290,000 years from 2000) saturate: their midnight would not fit
// in int64 microseconds.
constexpr CalendarIndex MAX_LOCAL_DAYS = std::numeric_limits<Micros>::max() / DAY - 1;

template <typename T>
T floor_div(T a, T b) noexcept {
    const T quotient = a / b;
    return (a % b != 0 && (a < 0) != (b < 0)) ? quotient - 1 : quotient;
}

// The calendar unit (day, week or month number) a local time falls in.
CalendarIndex local_unit(CalendarUnit unit, Micros local) noexcept {
    const std::int64_t day = floor_div(local, DAY);
    switch (unit) {
        case CalendarUnit::week:
            return floor_div<std::int64_t>(day - FIRST_MONDAY, 7);
        case CalendarUnit::month: {
            const CivilDate date = civil_from_days(day);
            return static_cast<CalendarIndex>(date.year - 2000) * 12 + (date.month - 1);
        }
        case CalendarUnit::day:
        case CalendarUnit::none:
            break;
    }
    return day;
}

// The local day on which unit number `unit` begins.
CalendarIndex unit_first_day(CalendarUnit unit, CalendarIndex number) noexcept {
    switch (unit) {
        case CalendarUnit::week:
            return number * 7 + FIRST_MONDAY;
        case CalendarUnit::month: {
            // Beyond any representable local day either way: keep the year arithmetic within int64.
            constexpr CalendarIndex MAX_MONTHS = MAX_LOCAL_DAYS / 28;
            if (number > MAX_MONTHS) return MAX_LOCAL_DAYS + 1;
            if (number < -MAX_MONTHS) return -MAX_LOCAL_DAYS - 1;
            const auto months = static_cast<std::int64_t>(number);
            return days_from_civil(2000 + floor_div<std::int64_t>(months, 12),
                                   static_cast<int>(months - floor_div<std::int64_t>(months, 12) * 12) + 1, 1);
        }
        case CalendarUnit::day:
        case CalendarUnit::none:
            break;
    }
    return number;
}

}  // namespace

std::int64_t days_from_civil(std::int64_t year, int month, int day) noexcept {
    // Counted in 400-year eras of 146,097 days that begin on 1 March, so that the leap day ends a year.
    const std::int64_t march_year = year - (month <= 2 ? 1 : 0);
    const std::int64_t era = floor_div<std::int64_t>(march_year, 400);
    const std::int64_t year_of_era = march_year - era * 400;                      // 0..399
    const int month_from_march = month > 2 ? month - 3 : month + 9;               // 0..11
    const std::int64_t day_of_year = (153 * month_from_march + 2) / 5 + day - 1;  // 0..365
    const std::int64_t day_of_era = year_of_era * 365 + year_of_era / 4 - year_of_era / 100 + day_of_year;
    // 2000-03-01 is day 60 after 2000-01-01, and the first day of era 5.
    return era * 146097 + day_of_era - (5 * 146097 - 60);
}

CivilDate civil_from_days(std::int64_t days) noexcept {
    const std::int64_t since_era0 = days + (5 * 146097 - 60);  // days since 0000-03-01
    const std::int64_t era = floor_div<std::int64_t>(since_era0, 146097);
    const std::int64_t day_of_era = since_era0 - era * 146097;  // 0..146096
    const std::int64_t year_of_era =
        (day_of_era - day_of_era / 1460 + day_of_era / 36524 - day_of_era / 146096) / 365;  // 0..399
    const std::int64_t day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
    const std::int64_t month_from_march = (5 * day_of_year + 2) / 153;  // 0..11
    const int day = static_cast<int>(day_of_year - (153 * month_from_march + 2) / 5 + 1);
    const int month = static_cast<int>(month_from_march < 10 ? month_from_march + 3 : month_from_march - 9);
    return {year_of_era + era * 400 + (month <= 2 ? 1 : 0), month, day};
}

Micros calendar_nominal_period(CalendarUnit unit, std::int32_t count) noexcept {
    const int days = unit == CalendarUnit::month ? 30 : unit == CalendarUnit::week ? 7 : 1;
    // Beyond MAX_PERIOD only says "too long": saturate there instead of overflowing.
    return static_cast<Micros>(std::min<CalendarIndex>(CalendarIndex{count} * days * DAY, MAX_PERIOD + 1));
}

Micros calendar_start(const Calendar &calendar, CalendarIndex index) noexcept {
    const CalendarIndex day = unit_first_day(calendar.unit, index * calendar.count);
    if (day > MAX_LOCAL_DAYS) return std::numeric_limits<Micros>::max();
    if (day < -MAX_LOCAL_DAYS) return std::numeric_limits<Micros>::min();
    return calendar.zone->utc_of_local(*calendar.zone, static_cast<Micros>(day) * DAY);
}

CalendarIndex calendar_index(const Calendar &calendar, Micros t) noexcept {
    const TimeZone &zone = *calendar.zone;
    const auto unit = static_cast<std::uint8_t>(calendar.unit);
    for (const TimeZone::Window &window : zone.recent)
        if (window.unit == unit && window.count == calendar.count && window.opens <= t && t < window.closes)
            return window.index;
    const Micros local = saturating_add(t, zone.offset_at(zone, t));
    CalendarIndex index = floor_div<CalendarIndex>(local_unit(calendar.unit, local), calendar.count);
    // The wall clock at t names the window, except within a transition of the window's opening midnight
    // (a fall-back to the previous day, a skipped midnight): the openings themselves decide there.
    Micros opens = calendar_start(calendar, index);
    Micros closes = 0;
    if (t < opens) {
        --index;
        closes = opens;
        opens = calendar_start(calendar, index);
    } else {
        closes = calendar_start(calendar, index + 1);
        if (t >= closes) {
            ++index;
            opens = closes;
            closes = calendar_start(calendar, index + 1);
        }
    }
    zone.recent[zone.next_recent++ % std::size(zone.recent)] = {unit, calendar.count, static_cast<std::int64_t>(index),
                                                                opens, closes};
    return index;
}

}  // namespace pg_ratelimit::core
