// Numbers in error messages: the shortest text that reads back as the same double, so that two
// different values never print alike ("cost 5.000000001 exceeds the capacity 5", not "5 exceeds 5").
#pragma once

#include "postgres_headers.hpp"

namespace pg_ratelimit {

inline const char *number_text(double value) { return double_to_shortest_decimal(value); }  // palloc'd

}  // namespace pg_ratelimit
