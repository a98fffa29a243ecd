// Decisions of calendar limits (fixed windows opening at local midnight, core/calendar.hpp) through
// core::request: issue 11's monthly quota in Europe/Paris, with retry_after and reset_after exact to the
// microsecond; units rolling over from month to month up to capacity; a clock stepped back; days of 23 and
// 25 hours; midnights skipped and repeated; a day that never happened; the far end of the timestamp range.
#include <gtest/gtest.h>

#include <cstring>

#include "core/algorithms.hpp"
#include "core/calendar.hpp"
#include "core/validate.hpp"
#include "dates.hpp"
#include "support.hpp"
#include "test_zones.hpp"

namespace pg_ratelimit::core {
namespace {

// A fixed window on a calendar, as rate_limit_define builds it: no start, the nominal period.
Limit CalendarWindow(double rate, double capacity, CalendarUnit unit, std::int32_t count, const TimeZone &zone,
                     double max_reserved = 0) {
    Limit limit = FixedWindowPerKey(rate, calendar_nominal_period(unit, count), capacity);
    limit.max_reserved = max_reserved;
    limit.calendar = {unit, count, &zone};
    return limit;
}

// A request for the key "k", at the origin the glue gives it (key_origin: none for a calendar).
Outcome Request(const Limit &limit, const State *stored, Micros now, double cost, bool reserve = false) {
    return request(limit, stored, now, cost, reserve, key_origin(limit, "k", 1));
}

const TimeZone &Paris() { return Tzdb("Europe/Paris").zone(); }

// Issue 11: "10,000 API calls per calendar month in Europe/Paris, resetting at local midnight on the 1st".
TEST(CalendarDecisions, IssueMonthlyQuotaInParis) {
    const Limit limit = CalendarWindow(10000, 10000, CalendarUnit::month, 1, Paris());
    ASSERT_EQ(validate_limit(limit), LimitProblem::none);
    const Micros april = UtcAt(2026, 3, 31, 22);  // 1 April 2026 00:00 CEST

    // A new key has the month's 10,000; it is full again when April begins.
    const Micros first_call = UtcAt(2026, 3, 10, 12);
    const Outcome first = Request(limit, nullptr, first_call, 1);
    ASSERT_TRUE(first.allowed);
    EXPECT_EQ(first.balance, 9999);
    EXPECT_EQ(first.retry_after, 0);
    EXPECT_EQ(first.reset_after, april - first_call);

    const Outcome rest = Request(limit, &first.next, UtcAt(2026, 3, 12, 8), 9999);
    ASSERT_TRUE(rest.allowed);
    EXPECT_EQ(rest.balance, 0);
    const State spent = rest.next;

    // The 10,001st call of March waits until April, to the microsecond.
    const Micros later = UtcAt(2026, 3, 20, 17, 45, 30) + 250;
    const Outcome denied = Request(limit, &spent, later, 1);
    EXPECT_FALSE(denied.allowed);
    EXPECT_FALSE(denied.write);
    EXPECT_EQ(denied.balance, 0);
    EXPECT_EQ(denied.retry_after, april - later);
    EXPECT_EQ(denied.reset_after, april - later);

    const Outcome last_microsecond = Request(limit, &spent, april - 1, 1);
    EXPECT_FALSE(last_microsecond.allowed);
    EXPECT_EQ(last_microsecond.retry_after, 1);
    EXPECT_EQ(last_microsecond.reset_after, 1);

    const Outcome at_midnight = Request(limit, &spent, april, 1);
    EXPECT_TRUE(at_midnight.allowed);
    EXPECT_EQ(at_midnight.balance, 9999);
    // April has 30 days of CEST: full again on 1 May at 00:00 CEST.
    EXPECT_EQ(at_midnight.reset_after, 30 * kDay);
    EXPECT_EQ(Request(limit, &spent, april, 10000).reset_after, 30 * kDay);
}

// The same quota around the end of summer time and in a leap February: the month ends at local midnight
// whatever its length.
TEST(CalendarDecisions, MonthsOfEveryLength) {
    const Limit limit = CalendarWindow(10000, 10000, CalendarUnit::month, 1, Paris());
    struct Month {
        Micros opens;
        Micros closes;
    };
    const Month months[] = {
        {UtcAt(2026, 9, 30, 22), UtcAt(2026, 10, 31, 23)},  // October: 31 days and 1 hour
        {UtcAt(2026, 2, 28, 23), UtcAt(2026, 3, 31, 22)},   // March: 31 days less 1 hour
        {UtcAt(2028, 1, 31, 23), UtcAt(2028, 2, 29, 23)},   // February 2028: 29 days
        {UtcAt(2027, 1, 31, 23), UtcAt(2027, 2, 28, 23)},   // February 2027: 28 days
    };
    for (const Month &month : months) {
        // Emptied at the first microsecond of the month: denied for exactly its length.
        const Outcome emptied = Request(limit, nullptr, month.opens, 10000);
        ASSERT_TRUE(emptied.allowed);
        EXPECT_EQ(emptied.reset_after, month.closes - month.opens);
        const Outcome denied = Request(limit, &emptied.next, month.opens, 1);
        EXPECT_FALSE(denied.allowed);
        EXPECT_EQ(denied.retry_after, month.closes - month.opens);
        EXPECT_FALSE(Request(limit, &emptied.next, month.closes - 1, 1).allowed);
        EXPECT_TRUE(Request(limit, &emptied.next, month.closes, 10000).allowed);
    }
}

// Capacity above the rate: unused units roll over from month to month, up to capacity.
TEST(CalendarDecisions, RolloverAcrossMonths) {
    const Limit limit = CalendarWindow(10000, 25000, CalendarUnit::month, 1, Paris());
    const State empty_in_january{0, UtcAt(2026, 1, 15)};
    // February: one month's units.
    const Micros february = UtcAt(2026, 2, 15);
    const Outcome one_month = Request(limit, &empty_in_january, february, 10001);
    EXPECT_FALSE(one_month.allowed);
    EXPECT_EQ(one_month.balance, 10000);
    EXPECT_EQ(one_month.retry_after, UtcAt(2026, 2, 28, 23) - february);  // 1 March 00:00 CET
    // Three openings by 1 April (February, March, April): 30,000, capped at 25,000.
    const Micros april = UtcAt(2026, 3, 31, 22);
    const Outcome capped = Request(limit, &empty_in_january, april, 25000);
    EXPECT_TRUE(capped.allowed);
    EXPECT_EQ(capped.balance, 0);
    const Outcome before_april = Request(limit, &empty_in_january, april - 1, 25000);
    EXPECT_FALSE(before_april.allowed);
    EXPECT_EQ(before_april.balance, 20000);
    EXPECT_EQ(before_april.retry_after, 1);
    // From empty in mid-March: 20,000 take two openings (1 April, 1 May); full (25,000) takes three.
    const Micros march = UtcAt(2026, 3, 15, 9, 30);
    const State empty_in_march{0, march};
    const Outcome two_months = Request(limit, &empty_in_march, march, 20000);
    EXPECT_FALSE(two_months.allowed);
    EXPECT_EQ(two_months.retry_after, UtcAt(2026, 4, 30, 22) - march);
    EXPECT_EQ(two_months.reset_after, UtcAt(2026, 5, 31, 22) - march);
}

// A reservation's debt is repaid by the next openings: retry_after is the opening that covers it.
TEST(CalendarDecisions, ReservationRepaidAtAnOpening) {
    const Limit limit = CalendarWindow(10000, 10000, CalendarUnit::month, 1, Paris(), /*max_reserved=*/15000);
    const Micros march = UtcAt(2026, 3, 15);
    const State empty{0, march};
    const Outcome small = Request(limit, &empty, march, 5000, /*reserve=*/true);
    ASSERT_TRUE(small.allowed);
    EXPECT_EQ(small.balance, -5000);
    EXPECT_EQ(small.retry_after, UtcAt(2026, 3, 31, 22) - march);
    const Outcome large = Request(limit, &empty, march, 15000, /*reserve=*/true);
    ASSERT_TRUE(large.allowed);
    EXPECT_EQ(large.retry_after, UtcAt(2026, 4, 30, 22) - march);  // 15,000 of debt: two months
    EXPECT_EQ(large.reset_after, UtcAt(2026, 5, 31, 22) - march);
}

// The clock steps back from April into March: the key keeps its April time, so crossing 1 April again
// mints nothing, and the waits still count from the real clock.
TEST(CalendarDecisions, ClockSteppedBack) {
    const Limit limit = CalendarWindow(10000, 10000, CalendarUnit::month, 1, Paris());
    const State spent_in_april{0, UtcAt(2026, 4, 10)};
    const Micros back = UtcAt(2026, 3, 20);
    const Outcome denied = Request(limit, &spent_in_april, back, 1);
    EXPECT_FALSE(denied.allowed);
    EXPECT_EQ(denied.balance, 0);
    EXPECT_EQ(denied.retry_after, UtcAt(2026, 4, 30, 22) - back);  // 1 May 00:00 CEST, from now
    // Back in April, before the stored time and after it: still April's spent units.
    EXPECT_FALSE(Request(limit, &spent_in_april, UtcAt(2026, 4, 1), 1).allowed);
    EXPECT_FALSE(Request(limit, &spent_in_april, UtcAt(2026, 4, 20), 1).allowed);
    EXPECT_TRUE(Request(limit, &spent_in_april, UtcAt(2026, 4, 30, 22), 1).allowed);
    // A call admitted while the clock is behind is stored in the key's window, not the clock's: a calendar
    // key keeps the opening of its window (1 April 00:00 CEST), whatever the instant of the call.
    const State half_in_april{5000, UtcAt(2026, 4, 10)};
    const Outcome admitted = Request(limit, &half_in_april, back, 1000);
    ASSERT_TRUE(admitted.allowed);
    EXPECT_EQ(admitted.next.ts, UtcAt(2026, 3, 31, 22));
    EXPECT_EQ(admitted.balance, 4000);
}

// Days in Paris: the day summer time begins has 23 hours, the day it ends 25.
TEST(CalendarDecisions, DailyQuotaAcrossDaylightSaving) {
    const Limit limit = CalendarWindow(1, 1, CalendarUnit::day, 1, Paris());
    // 29 March 2026, 00:30 CET: the next day begins at 00:00 CEST on the 30th, 22.5 hours later.
    const Micros spring = UtcAt(2026, 3, 28, 23, 30);
    const Outcome spring_used = Request(limit, nullptr, spring, 1);
    EXPECT_EQ(spring_used.reset_after, 22 * kHour + 30 * kMin);
    EXPECT_EQ(Request(limit, &spring_used.next, spring, 1).retry_after, 22 * kHour + 30 * kMin);
    EXPECT_EQ(Request(limit, nullptr, UtcAt(2026, 3, 28, 23), 1).reset_after, 23 * kHour);
    // 25 October 2026, 00:00 CEST: the next day begins 25 hours later, at 00:00 CET on the 26th.
    const Micros autumn = UtcAt(2026, 10, 24, 22);
    const Outcome autumn_used = Request(limit, nullptr, autumn, 1);
    EXPECT_EQ(autumn_used.reset_after, 25 * kHour);
    EXPECT_FALSE(Request(limit, &autumn_used.next, UtcAt(2026, 10, 25, 23) - 1, 1).allowed);
    EXPECT_TRUE(Request(limit, &autumn_used.next, UtcAt(2026, 10, 25, 23), 1).allowed);
    // Weeks: Sunday 29 March at noon (CEST), the week ends at Monday 00:00 CEST.
    const Limit weekly = CalendarWindow(100, 100, CalendarUnit::week, 1, Paris());
    const Micros sunday = UtcAt(2026, 3, 29, 10);
    EXPECT_EQ(Request(weekly, nullptr, sunday, 100).reset_after, 12 * kHour);
}

// São Paulo: the midnight skipped on 4 November 2018 opens that day at 01:00 -02; the hour repeated before
// midnight on 16 February 2019 belongs to the 16th both times.
TEST(CalendarDecisions, SkippedAndRepeatedMidnights) {
    const TimeZone &sao_paulo = Tzdb("America/Sao_Paulo").zone();
    const Limit limit = CalendarWindow(1, 1, CalendarUnit::day, 1, sao_paulo);
    const Micros noon = UtcAt(2018, 11, 3, 15);  // 3 November, 12:00 -03
    const Outcome used = Request(limit, nullptr, noon, 1);
    EXPECT_EQ(Request(limit, &used.next, noon, 1).retry_after, 12 * kHour);  // 4 November, 01:00 -02
    const Micros skipped_day = UtcAt(2018, 11, 4, 3);
    EXPECT_EQ(Request(limit, nullptr, skipped_day, 1).reset_after, 23 * kHour);

    const Micros first_time = UtcAt(2019, 2, 17, 1, 30);   // 16 February, 23:30 -02
    const Micros second_time = UtcAt(2019, 2, 17, 2, 30);  // 16 February, 23:30 -03
    const Outcome early = Request(limit, nullptr, first_time, 1);
    EXPECT_EQ(early.reset_after, 90 * kMin);  // 17 February, 00:00 -03
    const Outcome again = Request(limit, &early.next, second_time, 1);
    EXPECT_FALSE(again.allowed);  // the same day
    EXPECT_EQ(again.retry_after, 30 * kMin);
}

// Apia skipped 30 December 2011. That day is a window of no length, opening with the 31st: a key emptied
// on the 29th gets both days' units at 31 December 00:00 (+14), and none before.
TEST(CalendarDecisions, DayThatNeverHappened) {
    const TimeZone &apia = Tzdb("Pacific/Apia").zone();
    const Limit limit = CalendarWindow(1, 2, CalendarUnit::day, 1, apia);
    const Micros on_29th = UtcAt(2011, 12, 29, 12);  // 29 December, 02:00 -10
    const State empty{0, on_29th};
    const Micros change = UtcAt(2011, 12, 30, 10);
    const Outcome waiting = Request(limit, &empty, on_29th, 2);
    EXPECT_FALSE(waiting.allowed);
    EXPECT_EQ(waiting.retry_after, change - on_29th);
    EXPECT_EQ(waiting.reset_after, change - on_29th);
    EXPECT_FALSE(Request(limit, &empty, change - 1, 1).allowed);
    const Outcome both = Request(limit, &empty, change, 2);
    EXPECT_TRUE(both.allowed);
    EXPECT_EQ(both.balance, 0);
}

// Windows opening at 18:30 UTC (+05:30) and 10:00 UTC (-10:00).
TEST(CalendarDecisions, FixedOffsets) {
    const Limit india = CalendarWindow(5, 5, CalendarUnit::day, 1, Tzdb("Asia/Kolkata").zone());
    const Micros noon = UtcAt(2026, 6, 15, 12);
    EXPECT_EQ(Request(india, nullptr, noon, 5).reset_after, 6 * kHour + 30 * kMin);
    const Limit hawaii = CalendarWindow(5, 5, CalendarUnit::day, 1, FixedOffset(-10 * kHour));
    EXPECT_EQ(Request(hawaii, nullptr, noon, 5).reset_after, 22 * kHour);
}

// Every key of a calendar limit shares its windows: the origin the glue passes is 0 whatever the key, and
// the decision ignores it anyway.
TEST(CalendarDecisions, NoPerKeyOffset) {
    const Limit limit = CalendarWindow(10, 10, CalendarUnit::day, 1, Paris());
    const char *keys[] = {"k", "user:42", "tenant/7/api"};
    for (const char *key : keys) EXPECT_EQ(key_origin(limit, key, std::strlen(key)), 0) << key;
    const State stored{0, UtcAt(2026, 6, 15, 8)};
    const Micros now = UtcAt(2026, 6, 15, 20);
    for (const Micros origin : {Micros{0}, Micros{12345}, kDay - 1}) {
        const Outcome out = request(limit, &stored, now, 1, false, origin);
        EXPECT_FALSE(out.allowed);
        EXPECT_EQ(out.retry_after, UtcAt(2026, 6, 15, 22) - now) << origin;
    }
}

// At the far end of PostgreSQL's range: decisions stay finite and within their bounds. The last month of
// 294276 ends at 294277-01-01 00:00 local, after PostgreSQL's last instant but still an int64 instant.
TEST(CalendarDecisions, FarEndOfTheTimestampRange) {
    for (const NamedZone &zone : TestZones()) {
        const Limit limit = CalendarWindow(10, 10, CalendarUnit::month, 1, *zone.zone);
        const Micros now = MAX_TIMESTAMP - kDay;
        const State stored{0, now};
        const Outcome denied = Request(limit, &stored, now, 1);
        EXPECT_FALSE(denied.allowed) << zone.name;
        const Micros next = calendar_start(limit.calendar, calendar_index(limit.calendar, now) + 1);
        EXPECT_EQ(denied.retry_after, next - now) << zone.name;
        EXPECT_TRUE(Request(limit, &stored, next, 1).allowed) << zone.name;
        EXPECT_FALSE(Request(limit, &stored, next - 1, 1).allowed) << zone.name;
        // A century-long window from the first instant PostgreSQL knows.
        const Limit century = CalendarWindow(10, 10, CalendarUnit::month, MAX_CALENDAR_MONTHS, *zone.zone);
        const Outcome early = Request(century, nullptr, kPgMinTimestamp, 10);
        EXPECT_TRUE(early.allowed) << zone.name;
        EXPECT_GT(early.reset_after, 0) << zone.name;
        EXPECT_LE(early.reset_after, MAX_DURATION) << zone.name;
    }
}

}  // namespace
}  // namespace pg_ratelimit::core
