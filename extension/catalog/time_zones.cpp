#include "catalog/time_zones.hpp"

#include "catalog/limit_cache.hpp"
#include "core/calendar.hpp"
#include "message_text.hpp"
#include "pg_compat.hpp"

namespace pg_ratelimit {
namespace {

struct ZoneEntry {
    pg_tz *key;  // pg_tzset's zones live as long as the backend
    core::TimeZone zone;
};

HTAB *zones = nullptr;

const pg_tz *pg_zone(const core::TimeZone &zone) { return static_cast<const pg_tz *>(zone.data); }

core::Micros offset_at(const core::TimeZone &zone, core::Micros utc) noexcept {
    // pg_localtime counts whole seconds since 1970; offsets are whole seconds.
    constexpr pg_time_t EPOCH_SHIFT = static_cast<pg_time_t>(POSTGRES_EPOCH_JDATE - UNIX_EPOCH_JDATE) * SECS_PER_DAY;
    const pg_time_t seconds = utc / USECS_PER_SEC - (utc % USECS_PER_SEC < 0 ? 1 : 0) + EPOCH_SHIFT;
    const struct pg_tm *local = pg_localtime(&seconds, pg_zone(zone));
    return local == nullptr ? 0 : static_cast<core::Micros>(local->tm_gmtoff) * USECS_PER_SEC;
}

core::Micros utc_of_local(const core::TimeZone &zone, core::Micros local) noexcept {
    struct pg_tm fields;
    fsec_t fraction = 0;
    // Out of PostgreSQL's range: as UTC (the caller only asks about instants it can hold, give or take).
    if (timestamp2tm(local, nullptr, &fields, &fraction, nullptr, nullptr) != 0) return local;
    // PostgreSQL's own reading of a local time: the later instant of a repeated one, the earlier offset
    // for a skipped one (DetermineTimeZoneOffset; seconds west of Greenwich). It raises no error.
    const int west = DetermineTimeZoneOffset(&fields, const_cast<pg_tz *>(pg_zone(zone)));
    core::Micros utc = 0;
    if (__builtin_add_overflow(local, static_cast<core::Micros>(west) * USECS_PER_SEC, &utc)) return local;
    return utc;
}

}  // namespace

const core::TimeZone *time_zone_named(const char *name) {
    // Numeric names ('+03', '-05', '3') read as POSIX strings, west of Greenwich, where SET TIME ZONE reads
    // them east: refused, as are 'localtime' and 'posixrules', whatever the host links them to.
    const bool numeric = strchr("+-.0123456789< ", name[0]) != nullptr && name[0] != '\0';
    if (numeric || pg_strcasecmp(name, "localtime") == 0 || pg_strcasecmp(name, "posixrules") == 0)
        ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
                        errmsg("time zone \"%s\" is not a zone name", clipped_text(name)),
                        errdetail("A calendar takes a zone of the time zone database, not an offset or a host's "
                                  "local zone."),
                        errhint("Use a name from pg_timezone_names, such as 'Europe/Moscow', or 'Etc/GMT-3' for "
                                "3 hours east of UTC all year.")));
    pg_tz *tz = pg_tzset(name);
    if (tz == nullptr || !pg_tz_acceptable(tz))
        ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
                        errmsg("time zone \"%s\" is not recognized", clipped_text(name)),
                        errhint("Use a name from pg_timezone_names, such as 'Europe/Paris' or 'UTC'.")));
    if (zones == nullptr) {
        HASHCTL ctl;
        memset(&ctl, 0, sizeof(ctl));
        ctl.keysize = sizeof(pg_tz *);
        ctl.entrysize = sizeof(ZoneEntry);
        ctl.hcxt = TopMemoryContext;
        zones = hash_create("pg_ratelimit time zones", 8, &ctl, HASH_ELEM | HASH_BLOBS | HASH_CONTEXT);
    }
    bool found = false;
    auto *entry = static_cast<ZoneEntry *>(hash_search(zones, &tz, HASH_ENTER, &found));
    if (!found) {
        const char *canonical = pg_get_timezone_name(tz);
        entry->zone = core::TimeZone{offset_at, utc_of_local, tz};
        entry->zone.id = hash_bytes_extended(reinterpret_cast<const unsigned char *>(canonical),
                                             static_cast<int>(strlen(canonical)), 0);
    }
    return &entry->zone;
}

const char *time_zone_name(const core::TimeZone &zone) {
    return pg_get_timezone_name(const_cast<pg_tz *>(pg_zone(zone)));
}

void set_limit_period(core::Limit *limit, const Interval *period, const char *time_zone) {
    // PostgreSQL 17 has infinite intervals; no period is infinite.
    if (!pg_compat::interval_is_finite(period))
        ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE), errmsg("period must be finite"),
                        errdetail("The allowed range is from 1 microsecond to 100 years.")));
    limit->calendar = core::Calendar{};
    if (time_zone == nullptr && period->month == 0) {
        limit->period = period_micros(period);
        return;
    }
    if (limit->algorithm != core::Algorithm::fixed_window) {
        // Left for require_valid_limit to refuse: calendars are for fixed windows only.
        limit->calendar.unit = period->month != 0 ? core::CalendarUnit::month : core::CalendarUnit::day;
        limit->calendar.count = 1;
        limit->period = core::calendar_nominal_period(limit->calendar.unit, 1);
        return;
    }
    if (period->month < 0 || period->day < 0 || period->time < 0)
        ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE), errmsg("a calendar period must be positive")));
    const bool whole = period->month > 0 ? period->day == 0 && period->time == 0 : period->time == 0 && period->day > 0;
    if (!whole)
        ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
                        errmsg("a calendar period must be a whole number of months, weeks or days"),
                        errdetail("The period is %s.",
                                  DatumGetCString(DirectFunctionCall1(interval_out, IntervalPGetDatum(period)))),
                        errhint("For example '1 month', '3 months', '1 week' or '1 day'; without time_zone, a "
                                "period of days and hours runs on a plain grid.")));
    core::Calendar &calendar = limit->calendar;
    if (period->month > 0) {
        calendar.unit = core::CalendarUnit::month;
        calendar.count = period->month;
    } else if (period->day % 7 == 0) {
        calendar.unit = core::CalendarUnit::week;
        calendar.count = period->day / 7;
    } else {
        calendar.unit = core::CalendarUnit::day;
        calendar.count = period->day;
    }
    calendar.zone = time_zone_named(time_zone == nullptr ? "UTC" : time_zone);
    limit->period = core::calendar_nominal_period(calendar.unit, calendar.count);
}

}  // namespace pg_ratelimit
