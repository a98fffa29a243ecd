// Calendar windows (core/calendar.hpp): the date arithmetic, window openings at instants written out by
// hand (months of 28 to 31 days, days of 23 and 25 hours, midnights skipped or repeated by daylight saving,
// a day that never happened), and, for every test zone and period, the consistency of calendar_index with
// calendar_start over two centuries and at the far ends of the timestamp range.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <random>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "core/calendar.hpp"
#include "core/validate.hpp"
#include "dates.hpp"
#include "support.hpp"
#include "test_zones.hpp"

namespace pg_ratelimit::core {
namespace {

constexpr Micros kMaxInstant = std::numeric_limits<Micros>::max();
constexpr Micros kMinInstant = std::numeric_limits<Micros>::min();
// PostgreSQL's first timestamptz, 4714-11-24 00:00 UTC BC (datatype/timestamp.h: MIN_TIMESTAMP).
constexpr Micros kPgMinTimestamp = -211813488000000000;

std::int64_t FloorDiv(std::int64_t a, std::int64_t b) { return a / b - ((a % b != 0 && (a < 0) != (b < 0)) ? 1 : 0); }
std::int64_t FloorMod(std::int64_t a, std::int64_t b) { return a - FloorDiv(a, b) * b; }

// ---- Proleptic Gregorian dates ---------------------------------------------------------------------------

bool IsLeap(std::int64_t year) {
    return FloorMod(year, 4) == 0 && (FloorMod(year, 100) != 0 || FloorMod(year, 400) == 0);
}

int DaysInMonth(std::int64_t year, int month) {
    constexpr int kDays[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    return month == 2 && IsLeap(year) ? 29 : kDays[month - 1];
}

// A date walked one day at a time: the reference the core's formulas are checked against.
struct Walker {
    std::int64_t year = 2000;
    int month = 1;
    int day = 1;
    void Next() {
        if (++day <= DaysInMonth(year, month)) return;
        day = 1;
        if (++month <= 12) return;
        month = 1;
        ++year;
    }
    void Previous() {
        if (--day >= 1) return;
        if (--month < 1) {
            month = 12;
            --year;
        }
        day = DaysInMonth(year, month);
    }
};

::testing::AssertionResult Matches(std::int64_t number, const Walker &date) {
    const std::int64_t days = days_from_civil(date.year, date.month, date.day);
    const CivilDate civil = civil_from_days(number);
    if (days == number && civil.year == date.year && civil.month == date.month && civil.day == date.day) {
        return ::testing::AssertionSuccess();
    }
    return ::testing::AssertionFailure() << date.year << "-" << date.month << "-" << date.day << " is day " << number
                                         << ": days_from_civil=" << days << ", civil_from_days=" << civil.year << "-"
                                         << civil.month << "-" << civil.day;
}

TEST(CivilDays, KnownDates) {
    EXPECT_EQ(days_from_civil(2000, 1, 1), 0);
    EXPECT_EQ(days_from_civil(1970, 1, 1), -10957);
    EXPECT_EQ(days_from_civil(2026, 3, 1), 9556);
    EXPECT_EQ(days_from_civil(2028, 2, 29), 10286);
    EXPECT_EQ(days_from_civil(1900, 2, 28), -36466);
    EXPECT_EQ(days_from_civil(1900, 3, 1), -36465);  // 1900 is no leap year
    EXPECT_EQ(days_from_civil(2100, 3, 1), 36584);
    EXPECT_EQ(days_from_civil(2400, 2, 29), 146156);  // 2400 is one
    EXPECT_EQ(days_from_civil(1, 1, 1), -730119);
    EXPECT_EQ(days_from_civil(9999, 12, 31), 2921939);
    const CivilDate leap_day = civil_from_days(10286);
    EXPECT_EQ(leap_day.year, 2028);
    EXPECT_EQ(leap_day.month, 2);
    EXPECT_EQ(leap_day.day, 29);
}

// Day by day from 2000 to the end of 2401: 2000 and 2400 are leap years, 2100, 2200 and 2300 are not.
TEST(CivilDays, WalkForwardAcrossLeapCenturies) {
    Walker date;
    int failures = 0;
    for (std::int64_t number = 0; date.year <= 2401 && failures < 10; ++number, date.Next()) {
        const ::testing::AssertionResult ok = Matches(number, date);
        EXPECT_TRUE(ok);
        if (!ok) ++failures;
    }
    EXPECT_EQ(date.year, 2402);
}

// Day by day back to 801 BC (year -800): 1900 is no leap year, nor are -100, -200 and -300; 0 and -400 are.
TEST(CivilDays, WalkBackwardIntoNegativeYears) {
    Walker date;
    int failures = 0;
    std::int64_t number = 0;
    for (; date.year >= -800 && failures < 10; --number, date.Previous()) {
        const ::testing::AssertionResult ok = Matches(number, date);
        EXPECT_TRUE(ok);
        if (!ok) ++failures;
    }
    EXPECT_EQ(number, days_from_civil(-801, 12, 31));
}

// The core's formulas against glibc's timegm, over PostgreSQL's whole range and beyond.
TEST(CivilDays, AgreeWithTimegm) {
    std::mt19937_64 rng(0xc1f11);
    std::uniform_int_distribution<std::int64_t> years(-290000, 290000);  // DayNumber's range
    for (int i = 0; i < 100000; ++i) {
        const std::int64_t year = years(rng);
        const int month = static_cast<int>(rng() % 12) + 1;
        const int day = static_cast<int>(rng() % static_cast<std::uint64_t>(DaysInMonth(year, month))) + 1;
        ASSERT_EQ(days_from_civil(year, month, day), DayNumber(year, month, day)) << year << "-" << month << "-" << day;
    }
}

// civil_from_days gives a valid date that days_from_civil maps back, the day after it is the next date, for
// every day within 2,000 years of 2000 and at random out to far beyond any local day the core computes.
TEST(CivilDays, RoundTripOverAWideRange) {
    std::vector<std::int64_t> days;
    for (std::int64_t number = -800000; number <= 800000; ++number) days.push_back(number);
    std::mt19937_64 rng(0xc1f12);
    std::uniform_int_distribution<std::int64_t> wide(-(std::int64_t{1} << 40), std::int64_t{1} << 40);
    for (int i = 0; i < 200000; ++i) days.push_back(wide(rng));
    for (const std::int64_t extreme :
         {std::int64_t{1} << 40, -(std::int64_t{1} << 40), std::int64_t{106751991}, std::int64_t{-106751992}}) {
        days.push_back(extreme);
    }
    int failures = 0;
    for (const std::int64_t number : days) {
        const CivilDate date = civil_from_days(number);
        const CivilDate next = civil_from_days(number + 1);
        Walker successor{date.year, date.month, date.day};
        successor.Next();
        const bool ok = date.month >= 1 && date.month <= 12 && date.day >= 1 &&
                        date.day <= DaysInMonth(date.year, date.month) &&
                        days_from_civil(date.year, date.month, date.day) == number && next.year == successor.year &&
                        next.month == successor.month && next.day == successor.day;
        EXPECT_TRUE(ok) << "day " << number << " is " << date.year << "-" << date.month << "-" << date.day;
        if (!ok && ++failures >= 10) break;
    }
}

// ---- Windows opening at instants written out by hand ---------------------------------------------------

Calendar Months(int count, const TimeZone &zone) { return {CalendarUnit::month, count, &zone}; }
Calendar Weeks(int count, const TimeZone &zone) { return {CalendarUnit::week, count, &zone}; }
Calendar Days(int count, const TimeZone &zone) { return {CalendarUnit::day, count, &zone}; }

std::int64_t IndexAt(const Calendar &calendar, Micros t) {
    return static_cast<std::int64_t>(calendar_index(calendar, t));
}

// Window numbers: months from January 2000, weeks from Monday 2000-01-03, days from 2000-01-01.
std::int64_t MonthNumber(std::int64_t year, int month) { return (year - 2000) * 12 + month - 1; }
std::int64_t WeekNumber(std::int64_t year, int month, int day) { return FloorDiv(DayNumber(year, month, day) - 2, 7); }

// Window k of the calendar is [open, close): calendar_start says so, and calendar_index agrees at both ends.
::testing::AssertionResult IsWindow(const Calendar &calendar, std::int64_t k, Micros open, Micros close) {
    const Micros start = calendar_start(calendar, k);
    const Micros end = calendar_start(calendar, k + 1);
    const std::int64_t at_open = IndexAt(calendar, open);
    const std::int64_t before = IndexAt(calendar, open - 1);
    const std::int64_t at_last = IndexAt(calendar, close - 1);
    const std::int64_t at_close = IndexAt(calendar, close);
    if (start == open && end == close && at_open == k && before < k && at_last == k && at_close == k + 1) {
        return ::testing::AssertionSuccess();
    }
    return ::testing::AssertionFailure() << "window " << k << ": expected [" << open << ", " << close << "), got ["
                                         << start << ", " << end << "); index at open " << at_open << ", 1 us before "
                                         << before << ", at the last us " << at_last << ", at close " << at_close;
}

const TimeZone &Paris() { return Tzdb("Europe/Paris").zone(); }
const TimeZone &NewYork() { return Tzdb("America/New_York").zone(); }
const TimeZone &SaoPaulo() { return Tzdb("America/Sao_Paulo").zone(); }
const TimeZone &Apia() { return Tzdb("Pacific/Apia").zone(); }
const TimeZone &LordHowe() { return Tzdb("Australia/Lord_Howe").zone(); }
const TimeZone &Kolkata() { return Tzdb("Asia/Kolkata").zone(); }

// Issue 11: months in Europe/Paris open at local midnight on the 1st, CET in winter, CEST in summer.
TEST(CalendarOpenings, MonthsInParis) {
    const Calendar months = Months(1, Paris());
    EXPECT_TRUE(IsWindow(months, MonthNumber(2026, 1), UtcAt(2025, 12, 31, 23), UtcAt(2026, 1, 31, 23)));
    EXPECT_TRUE(IsWindow(months, MonthNumber(2026, 2), UtcAt(2026, 1, 31, 23), UtcAt(2026, 2, 28, 23)));
    // March loses the hour of the change to summer time; October gains one.
    EXPECT_TRUE(IsWindow(months, MonthNumber(2026, 3), UtcAt(2026, 2, 28, 23), UtcAt(2026, 3, 31, 22)));
    EXPECT_TRUE(IsWindow(months, MonthNumber(2026, 4), UtcAt(2026, 3, 31, 22), UtcAt(2026, 4, 30, 22)));
    EXPECT_TRUE(IsWindow(months, MonthNumber(2026, 10), UtcAt(2026, 9, 30, 22), UtcAt(2026, 10, 31, 23)));
    EXPECT_TRUE(IsWindow(months, MonthNumber(2026, 12), UtcAt(2026, 11, 30, 23), UtcAt(2026, 12, 31, 23)));
    // February 2028 has 29 days, February 2100 28.
    EXPECT_TRUE(IsWindow(months, MonthNumber(2028, 2), UtcAt(2028, 1, 31, 23), UtcAt(2028, 2, 29, 23)));
    EXPECT_EQ(calendar_start(months, MonthNumber(2028, 3)) - calendar_start(months, MonthNumber(2028, 2)), 29 * kDay);
    EXPECT_EQ(calendar_start(months, MonthNumber(2100, 3)) - calendar_start(months, MonthNumber(2100, 2)), 28 * kDay);
    EXPECT_EQ(calendar_start(months, MonthNumber(2026, 4)) - calendar_start(months, MonthNumber(2026, 3)),
              31 * kDay - kHour);
    EXPECT_EQ(calendar_start(months, MonthNumber(2026, 11)) - calendar_start(months, MonthNumber(2026, 10)),
              31 * kDay + kHour);
    // Mid-month.
    EXPECT_EQ(IndexAt(months, UtcAt(2026, 3, 15, 12)), MonthNumber(2026, 3));
    EXPECT_EQ(IndexAt(months, UtcAt(1999, 12, 31, 23)), 0);  // 2000-01-01 00:00 CET
    EXPECT_EQ(IndexAt(months, UtcAt(1999, 12, 31, 23) - 1), -1);
}

// '3 months' are calendar quarters; '12 months' calendar years.
TEST(CalendarOpenings, QuartersAndYears) {
    const Calendar quarters = Months(3, Paris());
    const std::int64_t q2 = MonthNumber(2026, 4) / 3;
    EXPECT_TRUE(IsWindow(quarters, q2 - 1, UtcAt(2025, 12, 31, 23), UtcAt(2026, 3, 31, 22)));
    EXPECT_TRUE(IsWindow(quarters, q2, UtcAt(2026, 3, 31, 22), UtcAt(2026, 6, 30, 22)));
    EXPECT_TRUE(IsWindow(quarters, q2 + 2, UtcAt(2026, 9, 30, 22), UtcAt(2026, 12, 31, 23)));
    EXPECT_EQ(IndexAt(quarters, UtcAt(2026, 5, 15)), q2);
    const Calendar years = Months(12, Paris());
    EXPECT_TRUE(IsWindow(years, 26, UtcAt(2025, 12, 31, 23), UtcAt(2026, 12, 31, 23)));
    EXPECT_TRUE(IsWindow(years, 28, UtcAt(2027, 12, 31, 23), UtcAt(2028, 12, 31, 23)));  // 366 days
    EXPECT_TRUE(IsWindow(years, -1, UtcAt(1998, 12, 31, 23), UtcAt(1999, 12, 31, 23)));
    const Calendar utc_years = Months(12, FixedOffset(0));
    EXPECT_TRUE(IsWindow(utc_years, -100, UtcAt(1900, 1, 1), UtcAt(1901, 1, 1)));
}

// Days in Paris: 23 hours on the day summer time begins, 25 on the day it ends.
TEST(CalendarOpenings, DaysInParis) {
    const Calendar days = Days(1, Paris());
    EXPECT_TRUE(IsWindow(days, DayNumber(2026, 3, 28), UtcAt(2026, 3, 27, 23), UtcAt(2026, 3, 28, 23)));
    EXPECT_TRUE(IsWindow(days, DayNumber(2026, 3, 29), UtcAt(2026, 3, 28, 23), UtcAt(2026, 3, 29, 22)));
    EXPECT_TRUE(IsWindow(days, DayNumber(2026, 10, 25), UtcAt(2026, 10, 24, 22), UtcAt(2026, 10, 25, 23)));
    EXPECT_TRUE(IsWindow(days, DayNumber(2026, 10, 26), UtcAt(2026, 10, 25, 23), UtcAt(2026, 10, 26, 23)));
    // Within the repeated hour of 25 October (02:00-03:00, once CEST, once CET): the same day.
    EXPECT_EQ(IndexAt(days, UtcAt(2026, 10, 25, 0, 30)), DayNumber(2026, 10, 25));
    EXPECT_EQ(IndexAt(days, UtcAt(2026, 10, 25, 1, 30)), DayNumber(2026, 10, 25));
    // Windows of several days are counted from 2000-01-01: 3 days, and 7 days from a Saturday.
    const Calendar three = Days(3, Paris());
    const std::int64_t k = DayNumber(2026, 3, 29) / 3;  // day 9584 = 3 * 3194 + 2: 27 March to 29 March
    EXPECT_TRUE(IsWindow(three, k, UtcAt(2026, 3, 26, 23), UtcAt(2026, 3, 29, 22)));
    const Calendar seven = Days(7, FixedOffset(0));
    EXPECT_TRUE(IsWindow(seven, 0, UtcAt(2000, 1, 1), UtcAt(2000, 1, 8)));
    EXPECT_TRUE(IsWindow(seven, -1, UtcAt(1999, 12, 25), UtcAt(2000, 1, 1)));
}

// Weeks open on Monday at local midnight; '2 weeks' on every other Monday from 2000-01-03.
TEST(CalendarOpenings, WeeksFromMonday) {
    const Calendar weeks = Weeks(1, Paris());
    // Monday 23 March 2026 (CET) to Monday 30 March (CEST): 167 hours.
    EXPECT_TRUE(IsWindow(weeks, WeekNumber(2026, 3, 23), UtcAt(2026, 3, 22, 23), UtcAt(2026, 3, 29, 22)));
    EXPECT_EQ(WeekNumber(2026, 3, 23), 1368);
    EXPECT_EQ(IndexAt(weeks, UtcAt(2026, 3, 29, 12)), 1368);  // Sunday
    const Calendar utc_weeks = Weeks(1, FixedOffset(0));
    EXPECT_TRUE(IsWindow(utc_weeks, 0, UtcAt(2000, 1, 3), UtcAt(2000, 1, 10)));
    EXPECT_TRUE(IsWindow(utc_weeks, -1, UtcAt(1999, 12, 27), UtcAt(2000, 1, 3)));
    EXPECT_EQ(IndexAt(utc_weeks, UtcAt(2000, 1, 2, 23, 59, 59)), -1);  // Sunday 2 January 2000
    const Calendar fortnights = Weeks(2, FixedOffset(0));
    EXPECT_TRUE(IsWindow(fortnights, 0, UtcAt(2000, 1, 3), UtcAt(2000, 1, 17)));
    // Week 1368 (23 March 2026) is even: a fortnight starts there.
    EXPECT_TRUE(IsWindow(fortnights, 684, UtcAt(2026, 3, 23), UtcAt(2026, 4, 6)));
    const Calendar paris_fortnights = Weeks(2, Paris());
    EXPECT_TRUE(IsWindow(paris_fortnights, 684, UtcAt(2026, 3, 22, 23), UtcAt(2026, 4, 5, 22)));
}

TEST(CalendarOpenings, NewYork) {
    const Calendar months = Months(1, NewYork());
    EXPECT_TRUE(IsWindow(months, MonthNumber(2026, 3), UtcAt(2026, 3, 1, 5), UtcAt(2026, 4, 1, 4)));
    EXPECT_TRUE(IsWindow(months, MonthNumber(2026, 11), UtcAt(2026, 11, 1, 4), UtcAt(2026, 12, 1, 5)));
    const Calendar days = Days(1, NewYork());
    EXPECT_TRUE(IsWindow(days, DayNumber(2026, 3, 8), UtcAt(2026, 3, 8, 5), UtcAt(2026, 3, 9, 4)));
    EXPECT_TRUE(IsWindow(days, DayNumber(2026, 11, 1), UtcAt(2026, 11, 1, 4), UtcAt(2026, 11, 2, 5)));
}

// São Paulo: summer time began at midnight on 4 November 2018, so that day began at 01:00 -02 and lasted 23
// hours; it ended at midnight on 17 February 2019, when clocks went back to 23:00 on the 16th, which thus
// lasted 25 hours, its last hour twice.
TEST(CalendarOpenings, SaoPauloMidnightChanges) {
    const Calendar days = Days(1, SaoPaulo());
    EXPECT_TRUE(IsWindow(days, DayNumber(2018, 11, 3), UtcAt(2018, 11, 3, 3), UtcAt(2018, 11, 4, 3)));
    EXPECT_TRUE(IsWindow(days, DayNumber(2018, 11, 4), UtcAt(2018, 11, 4, 3), UtcAt(2018, 11, 5, 2)));
    EXPECT_TRUE(IsWindow(days, DayNumber(2019, 2, 16), UtcAt(2019, 2, 16, 2), UtcAt(2019, 2, 17, 3)));
    EXPECT_TRUE(IsWindow(days, DayNumber(2019, 2, 17), UtcAt(2019, 2, 17, 3), UtcAt(2019, 2, 18, 3)));
    // 23:30 on the 16th, the first time (-02) and the second (-03).
    EXPECT_EQ(IndexAt(days, UtcAt(2019, 2, 17, 1, 30)), DayNumber(2019, 2, 16));
    EXPECT_EQ(IndexAt(days, UtcAt(2019, 2, 17, 2, 30)), DayNumber(2019, 2, 16));
    const Calendar weeks = Weeks(1, SaoPaulo());  // Monday 29 October 2018 to Monday 5 November: 167 hours
    EXPECT_TRUE(IsWindow(weeks, WeekNumber(2018, 10, 29), UtcAt(2018, 10, 29, 3), UtcAt(2018, 11, 5, 2)));
    const Calendar months = Months(1, SaoPaulo());
    EXPECT_TRUE(IsWindow(months, MonthNumber(2018, 11), UtcAt(2018, 11, 1, 3), UtcAt(2018, 12, 1, 2)));
    EXPECT_TRUE(IsWindow(months, MonthNumber(2019, 2), UtcAt(2019, 2, 1, 2), UtcAt(2019, 3, 1, 3)));
}

// Apia skipped 30 December 2011: 29 December 23:59:59 -10 was followed by 31 December 00:00 +14. The day
// that never was is a window of no length, opening with the next day; December had 30 days.
TEST(CalendarOpenings, ApiaSkippedADay) {
    const Calendar days = Days(1, Apia());
    const Micros change = UtcAt(2011, 12, 30, 10);
    EXPECT_EQ(calendar_start(days, DayNumber(2011, 12, 29)), UtcAt(2011, 12, 29, 10));
    EXPECT_EQ(IndexAt(days, UtcAt(2011, 12, 29, 10)), DayNumber(2011, 12, 29));
    EXPECT_EQ(calendar_start(days, DayNumber(2011, 12, 30)), change);
    EXPECT_EQ(calendar_start(days, DayNumber(2011, 12, 31)), change);
    EXPECT_EQ(IndexAt(days, change), DayNumber(2011, 12, 31));
    EXPECT_EQ(IndexAt(days, change - 1), DayNumber(2011, 12, 29));
    EXPECT_EQ(calendar_start(days, DayNumber(2012, 1, 1)), UtcAt(2011, 12, 31, 10));
    // Monday 26 December 2011 to Monday 2 January 2012: six days.
    const Calendar weeks = Weeks(1, Apia());
    EXPECT_TRUE(IsWindow(weeks, WeekNumber(2011, 12, 26), UtcAt(2011, 12, 26, 10), UtcAt(2012, 1, 1, 10)));
    const Calendar months = Months(1, Apia());
    EXPECT_TRUE(IsWindow(months, MonthNumber(2011, 12), UtcAt(2011, 12, 1, 10), UtcAt(2011, 12, 31, 10)));
    EXPECT_EQ(UtcAt(2011, 12, 31, 10) - UtcAt(2011, 12, 1, 10), 30 * kDay);
}

// Lord Howe moves its clocks by half an hour, at 02:00: days of 24.5 and 23.5 hours.
TEST(CalendarOpenings, LordHoweHalfHours) {
    const Calendar days = Days(1, LordHowe());
    EXPECT_TRUE(IsWindow(days, DayNumber(2026, 4, 5), UtcAt(2026, 4, 4, 13), UtcAt(2026, 4, 5, 13, 30)));
    EXPECT_TRUE(IsWindow(days, DayNumber(2026, 10, 4), UtcAt(2026, 10, 3, 13, 30), UtcAt(2026, 10, 4, 13)));
    const Calendar months = Months(1, LordHowe());
    EXPECT_TRUE(IsWindow(months, MonthNumber(2026, 1), UtcAt(2025, 12, 31, 13), UtcAt(2026, 1, 31, 13)));
    EXPECT_TRUE(IsWindow(months, MonthNumber(2026, 5), UtcAt(2026, 4, 30, 13, 30), UtcAt(2026, 5, 31, 13, 30)));
}

TEST(CalendarOpenings, FixedOffsetsAndKolkata) {
    for (const TimeZone *zone : {&Kolkata(), &FixedOffset(5 * kHour + 30 * kMin)}) {
        const Calendar days = Days(1, *zone);
        EXPECT_TRUE(IsWindow(days, DayNumber(2026, 6, 15), UtcAt(2026, 6, 14, 18, 30), UtcAt(2026, 6, 15, 18, 30)));
    }
    const Calendar hawaii = Days(1, FixedOffset(-10 * kHour));
    EXPECT_TRUE(IsWindow(hawaii, DayNumber(2026, 6, 15), UtcAt(2026, 6, 15, 10), UtcAt(2026, 6, 16, 10)));
    const Calendar months = Months(1, FixedOffset(-10 * kHour));
    EXPECT_TRUE(IsWindow(months, MonthNumber(2026, 2), UtcAt(2026, 2, 1, 10), UtcAt(2026, 3, 1, 10)));
}

// Before PostgreSQL's first day (4714-11-24 BC) the glue reads local times as UTC, while offsets are still
// the zone's (New York's local mean time, -4:56:02): the wall clock then names the window before the one an
// instant is in, and calendar_index moves it up.
TEST(CalendarOpenings, AcrossPostgresFirstDay) {
    const Calendar days = Days(1, NewYork());
    const std::int64_t first_day = kPgMinTimestamp / kDay;
    const Micros lmt = 4 * kHour + 56 * kMin + 2 * kSec;
    EXPECT_EQ(calendar_start(days, first_day), kPgMinTimestamp + lmt);
    EXPECT_EQ(calendar_start(days, first_day - 1), kPgMinTimestamp - kDay);  // read as UTC
    EXPECT_EQ(IndexAt(days, kPgMinTimestamp - kDay), first_day - 1);
    EXPECT_EQ(IndexAt(days, kPgMinTimestamp - kDay - 1), first_day - 2);
    EXPECT_EQ(IndexAt(days, kPgMinTimestamp + lmt - 1), first_day - 1);
    EXPECT_EQ(IndexAt(days, kPgMinTimestamp + lmt), first_day);
}

TEST(CalendarOpenings, NominalPeriods) {
    EXPECT_EQ(calendar_nominal_period(CalendarUnit::day, 1), kDay);
    EXPECT_EQ(calendar_nominal_period(CalendarUnit::day, 3), 3 * kDay);
    EXPECT_EQ(calendar_nominal_period(CalendarUnit::week, 2), 14 * kDay);
    EXPECT_EQ(calendar_nominal_period(CalendarUnit::month, 1), 30 * kDay);
    EXPECT_EQ(calendar_nominal_period(CalendarUnit::month, 12), 360 * kDay);
    EXPECT_EQ(calendar_nominal_period(CalendarUnit::day, MAX_CALENDAR_DAYS), MAX_PERIOD);
    EXPECT_LE(calendar_nominal_period(CalendarUnit::week, MAX_CALENDAR_WEEKS), MAX_PERIOD);
    EXPECT_LE(calendar_nominal_period(CalendarUnit::month, MAX_CALENDAR_MONTHS), MAX_PERIOD);
    EXPECT_EQ(calendar_nominal_period(CalendarUnit::month, std::numeric_limits<std::int32_t>::max()), MAX_PERIOD + 1);
}

// ---- Validation ----------------------------------------------------------------------------------------

Limit CalendarLimit(CalendarUnit unit, std::int32_t count, const TimeZone *zone) {
    Limit limit = FixedWindowPerKey(10, calendar_nominal_period(unit, count), 10);
    limit.calendar = {unit, count, zone};
    return limit;
}

TEST(CalendarValidation, OnlyPlainFixedWindowsOfBoundedLength) {
    const TimeZone *paris = &Paris();
    EXPECT_EQ(validate_limit(CalendarLimit(CalendarUnit::month, 1, paris)), LimitProblem::none);
    EXPECT_EQ(validate_limit(CalendarLimit(CalendarUnit::day, MAX_CALENDAR_DAYS, paris)), LimitProblem::none);
    EXPECT_EQ(validate_limit(CalendarLimit(CalendarUnit::week, MAX_CALENDAR_WEEKS, paris)), LimitProblem::none);
    EXPECT_EQ(validate_limit(CalendarLimit(CalendarUnit::month, MAX_CALENDAR_MONTHS, paris)), LimitProblem::none);
    EXPECT_EQ(validate_limit(CalendarLimit(CalendarUnit::month, MAX_CALENDAR_MONTHS + 1, paris)),
              LimitProblem::calendar_count);
    EXPECT_EQ(validate_limit(CalendarLimit(CalendarUnit::week, MAX_CALENDAR_WEEKS + 1, paris)),
              LimitProblem::calendar_count);
    EXPECT_EQ(validate_limit(CalendarLimit(CalendarUnit::day, MAX_CALENDAR_DAYS + 1, paris)),
              LimitProblem::period_too_long);
    EXPECT_EQ(validate_limit(CalendarLimit(CalendarUnit::day, 0, paris)), LimitProblem::period);
    EXPECT_EQ(validate_limit(CalendarLimit(CalendarUnit::day, 1, nullptr)), LimitProblem::calendar_count);
    Limit started = CalendarLimit(CalendarUnit::month, 1, paris);
    started.has_start = true;
    EXPECT_EQ(validate_limit(started), LimitProblem::calendar_start);
    for (const Algorithm algorithm : {Algorithm::token_bucket, Algorithm::gcra, Algorithm::sliding_window}) {
        Limit other = CalendarLimit(CalendarUnit::day, 1, paris);
        other.algorithm = algorithm;
        EXPECT_EQ(validate_limit(other), LimitProblem::calendar_algorithm) << AlgorithmName(algorithm);
    }
}

// ---- Consistency of calendar_index and calendar_start -------------------------------------------------

struct Period {
    CalendarUnit unit;
    std::int32_t count;
    const char *name;
};

constexpr Period kPeriods[] = {
    {CalendarUnit::day, 1, "1 day"},
    {CalendarUnit::day, 2, "2 days"},
    {CalendarUnit::day, 3, "3 days"},
    {CalendarUnit::day, 7, "7 days"},
    {CalendarUnit::week, 1, "1 week"},
    {CalendarUnit::week, 2, "2 weeks"},
    {CalendarUnit::month, 1, "1 month"},
    {CalendarUnit::month, 3, "3 months"},
    {CalendarUnit::month, 12, "12 months"},
    // The longest of each unit: about a century.
    {CalendarUnit::day, MAX_CALENDAR_DAYS, "36600 days"},
    {CalendarUnit::week, MAX_CALENDAR_WEEKS, "5220 weeks"},
    {CalendarUnit::month, MAX_CALENDAR_MONTHS, "1200 months"},
};

// The local day on which window k begins (dates.hpp: glibc's arithmetic, not the core's).
std::int64_t FirstDay(const Calendar &calendar, std::int64_t k) {
    const std::int64_t units = k * calendar.count;
    switch (calendar.unit) {
        case CalendarUnit::week:
            return 2 + 7 * units;
        case CalendarUnit::month:
            return DayNumber(2000 + FloorDiv(units, 12), FloorMod(units, 12) + 1, 1);
        case CalendarUnit::day:
        case CalendarUnit::none:
            break;
    }
    return units;
}

// The shortest and longest a window may be: its nominal days, give or take the one day a zone may skip or
// repeat (Apia, 2011 and 1892).
void LengthBounds(const Calendar &calendar, Micros *shortest, Micros *longest) {
    const std::int64_t count = calendar.count;
    switch (calendar.unit) {
        case CalendarUnit::week:
            *shortest = (7 * count - 1) * kDay;
            *longest = (7 * count + 1) * kDay;
            return;
        case CalendarUnit::month:
            *shortest = (28 * count - 1) * kDay;
            *longest = (31 * count + 1) * kDay;
            return;
        case CalendarUnit::day:
        case CalendarUnit::none:
            break;
    }
    *shortest = (count - 1) * kDay;
    *longest = (count + 1) * kDay;
}

Micros Local(const TimeZone &zone, Micros t) { return t + zone.offset_at(zone, t); }

bool Saturated(Micros t) { return t == kMinInstant || t == kMaxInstant; }

// Collects the first few failures of a long loop, so that one mistake does not print a million lines.
class Failures {
  public:
    explicit Failures(std::string context) : context_(std::move(context)) {}
    template <typename... Parts>
    void Add(const Parts &...parts) {
        if (++count_ > 10) return;
        std::ostringstream out;
        (out << ... << parts);
        ADD_FAILURE() << context_ << ": " << out.str();
    }
    [[nodiscard]] bool Full() const { return count_ >= 10; }

  private:
    std::string context_;
    int count_ = 0;
};

// Windows first..last of a calendar: openings never go back; each window of non-zero length holds its
// opening and the microsecond before the next one, and the microsecond before its opening belongs to the
// window before (when that one has a length); its length is within the bounds; and it opens when the wall
// clock reaches local midnight of its first day, for the last time (a repeated midnight: its second time;
// a skipped one: the end of the gap).
struct Checked {
    std::int64_t windows = 0;
    int empty = 0;  // windows of no length
};
Checked CheckWindows(const Calendar &calendar, std::int64_t first, std::int64_t last, Failures &failures) {
    const TimeZone &zone = *calendar.zone;
    Micros shortest = 0;
    Micros longest = 0;
    LengthBounds(calendar, &shortest, &longest);
    Checked checked;
    Micros previous = calendar_start(calendar, first - 1);
    Micros open = calendar_start(calendar, first);
    for (std::int64_t k = first; k <= last && !failures.Full(); ++k) {
        ++checked.windows;
        const Micros close = calendar_start(calendar, k + 1);
        if (close < open) failures.Add("window ", k, " closes at ", close, " before it opens at ", open);
        if (Saturated(open) || Saturated(close)) {
            previous = open;
            open = close;
            continue;
        }
        if (close - open < shortest || close - open > longest) {
            failures.Add("window ", k, " [", open, ", ", close, ") lasts ", close - open);
        }
        if (open == close) {
            ++checked.empty;
        } else {
            if (IndexAt(calendar, open) != k)
                failures.Add("index at the opening of ", k, ": ", IndexAt(calendar, open));
            if (IndexAt(calendar, close - 1) != k) {
                failures.Add("index 1 us before the end of ", k, ": ", IndexAt(calendar, close - 1));
            }
            if (previous < open && !Saturated(previous) && IndexAt(calendar, open - 1) != k - 1) {
                failures.Add("index 1 us before the opening of ", k, ": ", IndexAt(calendar, open - 1));
            }
        }
        // The wall clock shows that midnight at the opening (the midnight itself, or its second time when
        // clocks went back to it), or jumps over it there (a skipped midnight).
        // (Not before PostgreSQL's first day, where the zones, like the glue's, read local times as UTC.)
        const Micros midnight = FirstDay(calendar, k) * kDay;
        const Micros wall = Local(zone, open);
        if (midnight >= kPgMinTimestamp &&
            !(wall == midnight || (Local(zone, open - 1) < midnight && midnight < wall))) {
            failures.Add("window ", k, " opens at ", open, ", wall clock ", wall, " (", Local(zone, open - 1),
                         " 1 us before), not at its midnight ", midnight);
        }
        // Where the offset changes around the opening, the wall clock never falls back below that midnight
        // afterwards: the opening is its last crossing.
        if (midnight >= kPgMinTimestamp && zone.offset_at(zone, open - kDay) != zone.offset_at(zone, open + kDay)) {
            for (Micros after = kHour / 4; after <= 26 * kHour; after += kHour / 4) {
                if (Local(zone, open + after) < midnight) {
                    failures.Add("window ", k, " opens at ", open, " but the wall clock is back before its midnight ",
                                 midnight, " at ", open + after);
                    break;
                }
            }
        }
        previous = open;
        open = close;
    }
    return checked;
}

std::string Context(const NamedZone &zone, const Period &period) { return zone.name + ", " + period.name; }

// Every window from 1890 to 2110, for every zone and period.
TEST(CalendarConsistency, EveryWindowOfTwoCenturies) {
    for (const NamedZone &zone : TestZones()) {
        for (const Period &period : kPeriods) {
            const Calendar calendar{period.unit, period.count, zone.zone};
            Failures failures(Context(zone, period));
            const std::int64_t first = IndexAt(calendar, UtcAt(1890, 1, 1));
            const std::int64_t last = IndexAt(calendar, UtcAt(2110, 1, 1));
            const Checked checked = CheckWindows(calendar, first, last, failures);
            EXPECT_EQ(checked.windows, last - first + 1) << Context(zone, period);
            // Only Apia's 30 December 2011 is a window of no length (a day, in windows of one day).
            const bool skips_a_day =
                zone.name == "Pacific/Apia" && period.unit == CalendarUnit::day && period.count == 1;
            EXPECT_EQ(checked.empty, skips_a_day ? 1 : 0) << Context(zone, period);
        }
    }
}

// Far from 2000: around 1900, 2500 and year 100,000, and at both ends of PostgreSQL's range.
TEST(CalendarConsistency, FarInstants) {
    const Micros instants[] = {UtcAt(1900, 1, 1),   UtcAt(1900, 2, 28, 23),   UtcAt(2500, 7, 1),
                               UtcAt(100000, 3, 1), kPgMinTimestamp,          kPgMinTimestamp + 40 * kDay,
                               MAX_TIMESTAMP,       MAX_TIMESTAMP - 40 * kDay};
    for (const NamedZone &zone : TestZones()) {
        for (const Period &period : kPeriods) {
            const Calendar calendar{period.unit, period.count, zone.zone};
            Failures failures(Context(zone, period));
            for (const Micros t : instants) {
                const std::int64_t k = IndexAt(calendar, t);
                const Micros open = calendar_start(calendar, k);
                const Micros close = calendar_start(calendar, k + 1);
                if (!Saturated(close) && !(open <= t && t < close)) {
                    failures.Add(t, " is in window ", k, " [", open, ", ", close, ")");
                }
                CheckWindows(calendar, k - 3, k + 3, failures);
            }
        }
    }
}

// Random instants in order, from 1850 to 2150 and far beyond: the window index never goes back, and each
// instant lies within the window calendar_index gives it.
TEST(CalendarConsistency, RandomInstantsInOrder) {
    std::mt19937_64 rng(0xca1e0);
    for (const NamedZone &zone : TestZones()) {
        // The same instants for every period: a zone scans glibc once for each year it is asked about.
        std::vector<Micros> instants;
        instants.reserve(10000);
        std::uniform_int_distribution<Micros> near(UtcAt(1850, 1, 1), UtcAt(2150, 1, 1));
        std::uniform_int_distribution<Micros> far(kPgMinTimestamp, MAX_TIMESTAMP);
        for (int i = 0; i < 10000; ++i) instants.push_back(i % 50 == 0 ? far(rng) : near(rng));
        std::sort(instants.begin(), instants.end());
        for (const Period &period : kPeriods) {
            const Calendar calendar{period.unit, period.count, zone.zone};
            Failures failures(Context(zone, period));
            std::int64_t last_index = std::numeric_limits<std::int64_t>::min();
            for (const Micros t : instants) {
                const std::int64_t k = IndexAt(calendar, t);
                if (k < last_index) failures.Add("index goes back at ", t, ": ", k, " after ", last_index);
                last_index = k;
                const Micros open = calendar_start(calendar, k);
                const Micros close = calendar_start(calendar, k + 1);
                if (!(open <= t && t < close)) failures.Add(t, " is in window ", k, " [", open, ", ", close, ")");
            }
        }
    }
}

// At the very ends of int64, where openings saturate: no overflow (the sanitizer build checks), the index
// never goes back, and an instant lies in its window wherever both ends of it are representable.
TEST(CalendarConsistency, Int64Ends) {
    for (const NamedZone &zone : TestZones()) {
        for (const Period &period : kPeriods) {
            const Calendar calendar{period.unit, period.count, zone.zone};
            Failures failures(Context(zone, period));
            std::vector<Micros> instants;
            for (Micros step = 1; step < kMaxInstant / 4; step *= 3) {
                instants.push_back(kMinInstant + step - 1);
                instants.push_back(kMaxInstant - step + 1);
            }
            std::sort(instants.begin(), instants.end());
            std::int64_t last_index = std::numeric_limits<std::int64_t>::min();
            for (const Micros t : instants) {
                const std::int64_t k = IndexAt(calendar, t);
                if (k < last_index) failures.Add("index goes back at ", t, ": ", k, " after ", last_index);
                last_index = k;
                const Micros open = calendar_start(calendar, k);
                const Micros close = calendar_start(calendar, k + 1);
                if (!Saturated(open) && !Saturated(close) && !(open <= t && t < close)) {
                    failures.Add(t, " is in window ", k, " [", open, ", ", close, ")");
                }
            }
            // Window numbers far beyond any instant saturate instead of overflowing.
            const CalendarIndex huge = CalendarIndex{1} << 100;
            EXPECT_EQ(calendar_start(calendar, huge), kMaxInstant) << Context(zone, period);
            EXPECT_EQ(calendar_start(calendar, -huge), kMinInstant) << Context(zone, period);
        }
    }
}

}  // namespace
}  // namespace pg_ratelimit::core
