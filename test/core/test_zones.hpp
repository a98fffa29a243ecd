// Time zones for the calendar tests (core::TimeZone, core/calendar.hpp): fixed offsets, and zones of the tz
// database (/usr/share/zoneinfo, read through glibc) that read local times by PostgreSQL's rules, as the glue
// does with PostgreSQL's own copy of the database (extension/catalog/time_zones.cpp):
// - offset_at(t): the offset in force at t, in whole seconds (glibc's tm_gmtoff, pg_localtime's);
// - utc_of_local(l): DetermineTimeZoneOffset's reading of a local time. Take the first offset change after
//   l - 1 day (l read as if it were UTC); the offsets before and after it give two candidate instants. If
//   both lie before the change, or both after it, that one; otherwise l is skipped or repeated, and the
//   later candidate wins: a skipped time maps with the offset before the gap (so a skipped midnight maps
//   to the end of a gap that starts there), a repeated one to its second occurrence.
// Like the glue, a zone of the database reads local times before PostgreSQL's first day (4714-11-24 BC,
// where timestamp2tm fails) as UTC, while its offsets there are still the database's (pg_localtime's): the
// two disagree across that edge, as they do in the server. Every zone answers as UTC where the answer would
// not fit in int64.
//
// TZ is process-global and localtime_r reads it. A zone reads glibc only to scan one stretch of about a
// year for its offset changes, under TZ set to its name (restored at once), and keeps what it found: every
// answer comes from that table, deterministic and fast, whatever TZ says meanwhile. (The suites ask about
// instants 100,000 years ahead, where waits are capped: stretches beyond 2200 are scanned coarsely.)
#pragma once

#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <limits>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "core/limit.hpp"
#include "dates.hpp"

namespace pg_ratelimit::core {

namespace test_zones_detail {

constexpr std::int64_t kMicrosPerSecond = 1000000;

// local - offset seconds, or local itself (read as UTC) if that does not fit in int64.
inline Micros Shifted(Micros local, __int128 offset_micros) {
    const __int128 utc = static_cast<__int128>(local) - offset_micros;
    if (utc < std::numeric_limits<Micros>::min() || utc > std::numeric_limits<Micros>::max()) return local;
    return static_cast<Micros>(utc);
}

// TZ set to a zone name for the lifetime of the object, and what it was before restored afterwards.
class ScopedTz {
  public:
    explicit ScopedTz(const std::string &name) {
        const char *before = std::getenv("TZ");
        had_value_ = before != nullptr;
        if (had_value_) before_ = before;
        setenv("TZ", name.c_str(), 1);
        tzset();
    }
    ~ScopedTz() {
        if (had_value_) {
            setenv("TZ", before_.c_str(), 1);
        } else {
            unsetenv("TZ");
        }
        tzset();
    }
    ScopedTz(const ScopedTz &) = delete;
    ScopedTz &operator=(const ScopedTz &) = delete;

  private:
    std::string before_;
    bool had_value_ = false;
};

}  // namespace test_zones_detail

// A zone at a fixed offset from UTC.
class FixedOffsetZone {
  public:
    explicit FixedOffsetZone(Micros offset) : offset_(offset), zone_{OffsetAt, UtcOfLocal, this} {}
    FixedOffsetZone(const FixedOffsetZone &) = delete;  // zone_ points to this object
    FixedOffsetZone &operator=(const FixedOffsetZone &) = delete;
    [[nodiscard]] const TimeZone &zone() const { return zone_; }

  private:
    static const FixedOffsetZone &Of(const TimeZone &zone) { return *static_cast<const FixedOffsetZone *>(zone.data); }
    static Micros OffsetAt(const TimeZone &zone, Micros /*utc*/) noexcept { return Of(zone).offset_; }
    static Micros UtcOfLocal(const TimeZone &zone, Micros local) noexcept {
        return test_zones_detail::Shifted(local, Of(zone).offset_);
    }

    Micros offset_;
    TimeZone zone_;
};

// A zone of the tz database, read through glibc.
class TzdbZone {
  public:
    explicit TzdbZone(std::string name) : name_(std::move(name)), zone_{OffsetAt, UtcOfLocal, this} {}
    TzdbZone(const TzdbZone &) = delete;  // zone_ points to this object
    TzdbZone &operator=(const TzdbZone &) = delete;
    [[nodiscard]] const TimeZone &zone() const { return zone_; }
    [[nodiscard]] const std::string &name() const { return name_; }
    // Whether the zone's file is there: glibc silently reads an unknown name as UTC.
    [[nodiscard]] bool Installed() const { return access(("/usr/share/zoneinfo/" + name_).c_str(), R_OK) == 0; }

    // The offset (seconds) in force at a UTC second (counted from 2000-01-01, like every time here).
    [[nodiscard]] std::int64_t OffsetSeconds(std::int64_t utc) const {
        const Stretch &stretch = StretchOf(FloorDiv(utc, kStretchSeconds));
        std::int64_t offset = stretch.offset_before;
        for (const Change &change : stretch.changes) {
            if (change.at > utc) break;
            offset = change.offset;
        }
        return offset;
    }

    // DetermineTimeZoneOffset's reading of a local time (see the top of the file).
    [[nodiscard]] Micros Utc(Micros local) const {
        using test_zones_detail::kMicrosPerSecond;
        if (local < kPgMinTimestamp) return local;  // out of PostgreSQL's range, as UTC
        const std::int64_t seconds = FloorDiv(local, kMicrosPerSecond);
        const std::int64_t day_before = seconds - 86400;
        const std::int64_t before = OffsetSeconds(day_before);
        std::int64_t offset = before;
        if (const Change *change = NextChange(day_before)) {
            const std::int64_t before_time = seconds - before;
            const std::int64_t after_time = seconds - change->offset;
            if (before_time < change->at && after_time < change->at) {
                offset = before;
            } else if (before_time > change->at && after_time >= change->at) {
                offset = change->offset;
            } else {
                offset = before_time > after_time ? before : change->offset;  // skipped or repeated: the later
            }
        }
        return test_zones_detail::Shifted(local, static_cast<__int128>(offset) * kMicrosPerSecond);
    }

  private:
    // The zone's changes are scanned a stretch of 2^25 s (388 days) at a time, probing every 6 hours from 1800
    // to 2200: no zone changes its offset twice within that (PostgreSQL assumes 48 hours). Beyond, where the
    // zones follow yearly rules (or none), every week.
    static constexpr std::int64_t kStretchSeconds = std::int64_t{1} << 25;
    static constexpr std::int64_t kFineFrom = -6311347200;  // 1800-01-01
    static constexpr std::int64_t kFineUntil = 6311433600;  // 2200-01-01
    static std::int64_t ProbeSeconds(std::int64_t at) {
        return at >= kFineFrom && at < kFineUntil ? 6 * 3600 : 7 * 86400;
    }

    struct Change {
        std::int64_t at;      // the first UTC second of the new offset
        std::int64_t offset;  // seconds east of UTC
    };
    struct Stretch {
        std::int64_t offset_before = 0;  // in force just before the stretch
        std::vector<Change> changes;     // in order
    };

    static const TzdbZone &Of(const TimeZone &zone) { return *static_cast<const TzdbZone *>(zone.data); }

    // The core's functions may not throw: a failure to allocate the cache ends the test run.
    static Micros OffsetAt(const TimeZone &zone, Micros utc) noexcept {
        try {
            using test_zones_detail::kMicrosPerSecond;
            return Of(zone).OffsetSeconds(FloorDiv(utc, kMicrosPerSecond)) * kMicrosPerSecond;
        } catch (...) {
            std::abort();
        }
    }
    static Micros UtcOfLocal(const TimeZone &zone, Micros local) noexcept {
        try {
            return Of(zone).Utc(local);
        } catch (...) {
            std::abort();
        }
    }

    // glibc's offset at a UTC second, under the TZ in force; UTC where glibc has no answer.
    static std::int64_t GlibcOffset(std::int64_t utc) {
        const auto t = static_cast<time_t>(utc + kUnixToPostgresSeconds);
        struct tm fields {};
        if (localtime_r(&t, &fields) == nullptr) return 0;
        return fields.tm_gmtoff;
    }

    const Stretch &StretchOf(std::int64_t index) const {
        auto found = stretches_.find(index);
        if (found == stretches_.end()) found = stretches_.emplace(index, Scan(index)).first;
        return found->second;
    }

    Stretch Scan(std::int64_t index) const {
        const test_zones_detail::ScopedTz tz(name_);
        const std::int64_t first = index * kStretchSeconds;
        const std::int64_t last = first + kStretchSeconds - 1;
        Stretch stretch;
        stretch.offset_before = GlibcOffset(first - 1);
        std::int64_t known = first - 1;  // the offset is `offset` up to here
        std::int64_t offset = stretch.offset_before;
        const std::int64_t step = ProbeSeconds(first);
        while (known < last) {
            const std::int64_t probe = std::min(known + step, last);
            if (GlibcOffset(probe) == offset) {
                known = probe;
                continue;
            }
            std::int64_t lo = known;  // the first second of the new offset is in (lo, hi]
            std::int64_t hi = probe;
            while (hi - lo > 1) {
                const std::int64_t mid = lo + (hi - lo) / 2;
                (GlibcOffset(mid) == offset ? lo : hi) = mid;
            }
            offset = GlibcOffset(hi);
            stretch.changes.push_back({hi, offset});
            known = hi;
        }
        return stretch;
    }

    // The first change after a UTC second, looking no further than the next stretch (a change more than a
    // day after the local time read cannot matter: both candidates lie before it).
    const Change *NextChange(std::int64_t utc) const {
        const std::int64_t index = FloorDiv(utc, kStretchSeconds);
        for (const std::int64_t i : {index, index + 1}) {
            for (const Change &change : StretchOf(i).changes) {
                if (change.at > utc) return &change;
            }
        }
        return nullptr;
    }

    std::string name_;
    TimeZone zone_;
    mutable std::map<std::int64_t, Stretch> stretches_;  // node-based: a Change found stays where it is
};

// The zones the tests use, built on first use and kept for the whole run.
inline const TzdbZone &Tzdb(const std::string &name) {
    static std::map<std::string, std::unique_ptr<TzdbZone>> zones;
    std::unique_ptr<TzdbZone> &zone = zones[name];
    if (!zone) zone = std::make_unique<TzdbZone>(name);
    return *zone;
}

// The same for a literal name: no temporary std::string at the call, so that g++ 14's -Wdangling-reference
// does not take `const TimeZone &z = Tzdb("Europe/Paris").zone();` for a reference into that temporary.
inline const TzdbZone &Tzdb(const char *name) { return Tzdb(std::string(name)); }

inline const TimeZone &FixedOffset(Micros offset) {
    static std::map<Micros, std::unique_ptr<FixedOffsetZone>> zones;
    std::unique_ptr<FixedOffsetZone> &zone = zones[offset];
    if (!zone) zone = std::make_unique<FixedOffsetZone>(offset);
    return zone->zone();
}

struct NamedZone {
    std::string name;
    const TimeZone *zone;
};

// Every zone of the calendar tests: two fixed offsets; Paris and New York (DST changes at night, never at
// midnight); São Paulo (until 2019 DST began at local midnight, which it skipped, and ended at midnight,
// which repeated the hour before it); Apia (skipped 30 December 2011 entirely); Lord Howe (30-minute DST);
// Kolkata (+05:30, no DST).
inline const std::vector<NamedZone> &TestZones() {
    constexpr Micros kMinute = 60 * test_zones_detail::kMicrosPerSecond;
    static const std::vector<NamedZone> zones = [] {
        std::vector<NamedZone> all = {{"+05:30", &FixedOffset(Micros{330} * kMinute)},
                                      {"-10:00", &FixedOffset(Micros{-600} * kMinute)}};
        for (const char *name : {"Europe/Paris", "America/New_York", "America/Sao_Paulo", "Pacific/Apia",
                                 "Australia/Lord_Howe", "Asia/Kolkata"}) {
            all.push_back({name, &Tzdb(name).zone()});
        }
        return all;
    }();
    return zones;
}

inline std::string ZoneName(const TimeZone *zone) {
    for (const NamedZone &named : TestZones()) {
        if (named.zone == zone) return named.name;
    }
    return "(unknown zone)";
}

}  // namespace pg_ratelimit::core
