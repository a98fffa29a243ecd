// The test zones themselves (test_zones.hpp): the offsets of the tz database at known changes (as zdump
// prints them), glibc's answers everywhere, and PostgreSQL's reading of skipped and repeated local times.
// The calendar suites are only as good as these zones.
#include <gtest/gtest.h>

#include <limits>
#include <random>

#include "dates.hpp"
#include "support.hpp"
#include "test_zones.hpp"

namespace pg_ratelimit::core {
namespace {

const TimeZone &Zone(const char *name) { return Tzdb(name).zone(); }
Micros OffsetAt(const TimeZone &zone, Micros t) { return zone.offset_at(zone, t); }
Micros Utc(const TimeZone &zone, Micros local) { return zone.utc_of_local(zone, local); }

TEST(TestZones, TzdataIsInstalled) {
    for (const NamedZone &named : TestZones()) {
        if (named.name[0] == '+' || named.name[0] == '-') continue;
        EXPECT_TRUE(Tzdb(named.name).Installed()) << named.name << ": install tzdata";
    }
}

struct KnownChange {
    const char *zone;
    Micros at;  // the first instant of the new offset
    Micros before;
    Micros after;
};

// From `zdump -v` of each zone.
TEST(TestZones, OffsetsAtKnownChanges) {
    const KnownChange changes[] = {
        {"Europe/Paris", UtcAt(2026, 3, 29, 1), kHour, 2 * kHour},
        {"Europe/Paris", UtcAt(2026, 10, 25, 1), 2 * kHour, kHour},
        {"America/New_York", UtcAt(2026, 3, 8, 7), -5 * kHour, -4 * kHour},
        {"America/New_York", UtcAt(2026, 11, 1, 6), -4 * kHour, -5 * kHour},
        {"America/Sao_Paulo", UtcAt(2018, 11, 4, 3), -3 * kHour, -2 * kHour},
        {"America/Sao_Paulo", UtcAt(2019, 2, 17, 2), -2 * kHour, -3 * kHour},
        {"Pacific/Apia", UtcAt(2011, 12, 30, 10), -10 * kHour, 14 * kHour},
        {"Australia/Lord_Howe", UtcAt(2026, 4, 4, 15), 11 * kHour, 10 * kHour + 30 * kMin},
        {"Australia/Lord_Howe", UtcAt(2026, 10, 3, 15, 30), 10 * kHour + 30 * kMin, 11 * kHour},
    };
    for (const KnownChange &change : changes) {
        const TimeZone &zone = Zone(change.zone);
        EXPECT_EQ(OffsetAt(zone, change.at - 1), change.before) << change.zone << " " << change.at;
        EXPECT_EQ(OffsetAt(zone, change.at), change.after) << change.zone << " " << change.at;
    }
    EXPECT_EQ(OffsetAt(Zone("Asia/Kolkata"), UtcAt(2026, 6, 15)), 5 * kHour + 30 * kMin);
    // Sao Paulo has kept -03 all year since 2019.
    EXPECT_EQ(OffsetAt(Zone("America/Sao_Paulo"), UtcAt(2026, 1, 15)), -3 * kHour);
}

// The table a zone keeps answers what glibc answers, at instants from 1850 to 2150 and far beyond.
TEST(TestZones, AgreeWithGlibc) {
    std::mt19937_64 rng(0x7a0e5);
    for (const char *name : {"Europe/Paris", "America/New_York", "America/Sao_Paulo", "Pacific/Apia",
                             "Australia/Lord_Howe", "Asia/Kolkata"}) {
        const TzdbZone &zone = Tzdb(name);
        std::uniform_int_distribution<std::int64_t> near(UtcAt(1850, 1, 1) / kSec, UtcAt(2150, 1, 1) / kSec);
        std::uniform_int_distribution<std::int64_t> far(-9'000'000'000'000, 9'000'000'000'000);
        for (int i = 0; i < 400; ++i) {
            const std::int64_t utc = (i % 4 == 0 ? far : near)(rng);
            std::int64_t expected = 0;
            {
                const test_zones_detail::ScopedTz tz(name);
                const auto t = static_cast<time_t>(utc + kUnixToPostgresSeconds);
                struct tm fields {};
                ASSERT_NE(localtime_r(&t, &fields), nullptr) << name << " " << utc;
                expected = fields.tm_gmtoff;
            }
            EXPECT_EQ(zone.OffsetSeconds(utc), expected) << name << " " << utc;
        }
    }
}

// PostgreSQL's reading of local times (`timestamp '...' AT TIME ZONE zone`): a time a gap skips maps with
// the offset before the gap; a time a fall-back repeats, to its later occurrence.
TEST(TestZones, SkippedAndRepeatedLocalTimes) {
    const TimeZone &paris = Zone("Europe/Paris");
    EXPECT_EQ(Utc(paris, WallClock(2026, 3, 29, 1, 59, 59)), UtcAt(2026, 3, 29, 0, 59, 59));
    EXPECT_EQ(Utc(paris, WallClock(2026, 3, 29, 2, 30)), UtcAt(2026, 3, 29, 1, 30));  // skipped: as CET
    EXPECT_EQ(Utc(paris, WallClock(2026, 3, 29, 3)), UtcAt(2026, 3, 29, 1));
    EXPECT_EQ(Utc(paris, WallClock(2026, 10, 25, 1, 59, 59)), UtcAt(2026, 10, 24, 23, 59, 59));
    EXPECT_EQ(Utc(paris, WallClock(2026, 10, 25, 2, 30)), UtcAt(2026, 10, 25, 1, 30));  // repeated: as CET
    EXPECT_EQ(Utc(paris, WallClock(2026, 10, 25, 3)), UtcAt(2026, 10, 25, 2));

    const TimeZone &new_york = Zone("America/New_York");
    EXPECT_EQ(Utc(new_york, WallClock(2026, 3, 8, 2, 30)), UtcAt(2026, 3, 8, 7, 30));
    EXPECT_EQ(Utc(new_york, WallClock(2026, 11, 1, 1, 30)), UtcAt(2026, 11, 1, 6, 30));

    // Midnight skipped: the end of the gap, 01:00 -02. The repeated hour before midnight: its second time.
    const TimeZone &sao_paulo = Zone("America/Sao_Paulo");
    EXPECT_EQ(Utc(sao_paulo, WallClock(2018, 11, 4)), UtcAt(2018, 11, 4, 3));
    EXPECT_EQ(Utc(sao_paulo, WallClock(2018, 11, 4, 0, 30)), UtcAt(2018, 11, 4, 3, 30));
    EXPECT_EQ(Utc(sao_paulo, WallClock(2018, 11, 4, 1)), UtcAt(2018, 11, 4, 3));
    EXPECT_EQ(Utc(sao_paulo, WallClock(2019, 2, 16, 22, 59, 59)), UtcAt(2019, 2, 17, 0, 59, 59));
    EXPECT_EQ(Utc(sao_paulo, WallClock(2019, 2, 16, 23, 30)), UtcAt(2019, 2, 17, 2, 30));
    EXPECT_EQ(Utc(sao_paulo, WallClock(2019, 2, 17)), UtcAt(2019, 2, 17, 3));

    // 30 December 2011 did not happen in Apia: all of it maps as -10, after the gap.
    const TimeZone &apia = Zone("Pacific/Apia");
    EXPECT_EQ(Utc(apia, WallClock(2011, 12, 29, 23)), UtcAt(2011, 12, 30, 9));
    EXPECT_EQ(Utc(apia, WallClock(2011, 12, 30)), UtcAt(2011, 12, 30, 10));
    EXPECT_EQ(Utc(apia, WallClock(2011, 12, 30, 12)), UtcAt(2011, 12, 30, 22));
    EXPECT_EQ(Utc(apia, WallClock(2011, 12, 31)), UtcAt(2011, 12, 30, 10));

    // Lord Howe moves by 30 minutes at 02:00.
    const TimeZone &lord_howe = Zone("Australia/Lord_Howe");
    EXPECT_EQ(Utc(lord_howe, WallClock(2026, 4, 5, 1, 45)), UtcAt(2026, 4, 4, 15, 15));    // repeated: +10:30
    EXPECT_EQ(Utc(lord_howe, WallClock(2026, 10, 4, 2, 15)), UtcAt(2026, 10, 3, 15, 45));  // skipped: +10:30

    // The microseconds of a local time carry over.
    EXPECT_EQ(Utc(paris, WallClock(2026, 6, 1) + 123456), UtcAt(2026, 5, 31, 22) + 123456);
    EXPECT_EQ(Utc(paris, WallClock(1999, 12, 31, 23, 59, 59) + 999999), UtcAt(1999, 12, 31, 22, 59, 59) + 999999);
}

// Every instant's own wall-clock time reads back as that instant, or as a later one showing the same time
// (the instant was the first occurrence of a repeated time).
TEST(TestZones, WallClockReadsBack) {
    std::mt19937_64 rng(0x7a0e6);
    std::uniform_int_distribution<Micros> instants(UtcAt(1850, 1, 1), UtcAt(2150, 1, 1));
    for (const NamedZone &named : TestZones()) {
        const TimeZone &zone = *named.zone;
        int repeated = 0;
        for (int i = 0; i < 20000; ++i) {
            const Micros t = instants(rng);
            const Micros local = t + OffsetAt(zone, t);
            const Micros back = Utc(zone, local);
            if (back != t) {
                ++repeated;
                EXPECT_GT(back, t) << named.name << " " << t;
                EXPECT_EQ(back + OffsetAt(zone, back), local) << named.name << " " << t;
            }
        }
        EXPECT_LT(repeated, 20) << named.name;  // repeated times are rare: at most a few hours a year
    }
}

TEST(TestZones, FixedOffsets) {
    const TimeZone &india = FixedOffset(5 * kHour + 30 * kMin);
    EXPECT_EQ(OffsetAt(india, kT0), 5 * kHour + 30 * kMin);
    EXPECT_EQ(Utc(india, WallClock(2026, 6, 15)), UtcAt(2026, 6, 14, 18, 30));
    const TimeZone &hawaii = FixedOffset(-10 * kHour);
    EXPECT_EQ(Utc(hawaii, WallClock(2026, 6, 15)), UtcAt(2026, 6, 15, 10));
}

// Neither function fails anywhere in int64: beyond it, a local time reads as UTC.
TEST(TestZones, AnswerAtTheInt64Ends) {
    constexpr Micros kMax = std::numeric_limits<Micros>::max();
    constexpr Micros kMin = std::numeric_limits<Micros>::min();
    for (const NamedZone &named : TestZones()) {
        const TimeZone &zone = *named.zone;
        for (const Micros t : {kMin, kMin + 1, kMax - 1, kMax}) {
            const Micros offset = OffsetAt(zone, t);
            EXPECT_LT(offset < 0 ? -offset : offset, 16 * kHour) << named.name << " " << t;
            const Micros utc = Utc(zone, t);
            EXPECT_LE(utc < t ? t - utc : utc - t, 16 * kHour) << named.name << " " << t;
        }
        EXPECT_EQ(Utc(zone, kMax) >= kMax - 16 * kHour, true) << named.name;
    }
}

}  // namespace
}  // namespace pg_ratelimit::core
