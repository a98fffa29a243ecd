// Time zones for calendar limits (core/calendar.hpp): PostgreSQL's zone database behind the core's
// TimeZone, and a limit's calendar from its period and time_zone.
#pragma once

#include "core/limit.hpp"
#include "postgres_headers.hpp"

namespace pg_ratelimit {

// The zone PostgreSQL knows by `name` (as SET TIME ZONE accepts it), one TimeZone per zone for the
// backend's life; ERROR 22023 for an unknown zone or one with leap seconds.
const core::TimeZone *time_zone_named(const char *name);
// The zone's own spelling of its name (what rate_limit_define stores).
const char *time_zone_name(const core::TimeZone &zone);

// Sets limit->period and limit->calendar from a period and a time_zone (nullptr: none). A calendar when
// a zone is given or the period has months: then the period must be whole months, whole weeks or whole
// days (ERROR 22023 otherwise), and the zone defaults to UTC. Otherwise the plain grid of the period.
// limit->algorithm must be set: for another algorithm than the fixed window, a calendar is only marked,
// for require_valid_limit to refuse.
void set_limit_period(core::Limit *limit, const Interval *period, const char *time_zone);

}  // namespace pg_ratelimit
