// The consistency of calendar_index with calendar_start (core/calendar.hpp), for every test zone and for
// windows of 1, 2, 3, 7 and 36600 days, 1, 2 and 5220 weeks, 1, 3, 12 and 1200 months: over every window
// from 1890 to 2110, around year 1900, 2500 and 100,000 and both ends of PostgreSQL's range, at random
// instants in order, and at the very ends of int64 (run under the sanitizers by the test command).
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
#include "dates.hpp"
#include "support.hpp"
#include "test_zones.hpp"

namespace pg_ratelimit::core {
namespace {

constexpr Micros kMaxInstant = std::numeric_limits<Micros>::max();
constexpr Micros kMinInstant = std::numeric_limits<Micros>::min();

std::int64_t IndexAt(const Calendar &calendar, Micros t) {
    return static_cast<std::int64_t>(calendar_index(calendar, t));
}

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
