// The server clock, and the superuser-only setting that pins it for deterministic tests.
#pragma once

#include "postgres_headers.hpp"

namespace pg_ratelimit {

// Registers pg_ratelimit.fake_now (PGC_SUSET: only superusers may set it).
void clock_init();

// clock_timestamp(): the real time at this moment, unless pg_ratelimit.fake_now pins it.
TimestampTz clock_now();

}  // namespace pg_ratelimit
