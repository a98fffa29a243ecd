// Calendar windows (core/calendar.hpp) opening at instants written out by hand: months of 28 to 31 days,
// quarters and years, days of 23 and 25 hours, weeks from Monday, midnights skipped or repeated by daylight
// saving, a day that never happened, half-hour changes, fixed offsets, the edge of PostgreSQL's range; and
// the validation of calendar limits.
#include <gtest/gtest.h>

#include <cstdint>
#include <limits>

#include "core/calendar.hpp"
#include "core/validate.hpp"
#include "dates.hpp"
#include "support.hpp"
#include "test_zones.hpp"

namespace pg_ratelimit::core {
namespace {

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

}  // namespace
}  // namespace pg_ratelimit::core
