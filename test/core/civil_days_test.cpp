// Proleptic Gregorian dates as day counts from 2000-01-01 and back (core/calendar.hpp: days_from_civil,
// civil_from_days), which calendar windows are numbered by: against a walk one day at a time across leap
// centuries (1900, 2000, 2100, 2400) and into negative years, against glibc's timegm, and round trips far
// beyond any local day the core computes.
#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <vector>

#include "core/calendar.hpp"
#include "dates.hpp"

namespace pg_ratelimit::core {
namespace {

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

}  // namespace
}  // namespace pg_ratelimit::core
