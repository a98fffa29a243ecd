// Durations as the server prints `extract(epoch FROM <interval>)`: seconds with a decimal fraction.
#pragma once

#include <chrono>
#include <string_view>

namespace pg_ratelimit::detail {

// Whole microseconds of `text`, a number of seconds as PostgreSQL prints it: numeric since PostgreSQL
// 14 ("19.999982", "-1.500000": exact, converted digit by digit), float8 before ("1.5e+20", "Infinity":
// converted through double). Rounds to the nearest microsecond, halves away from zero; saturates at
// the limits of microseconds instead of overflowing. Throws std::invalid_argument for text that is no
// number.
std::chrono::microseconds micros_from_seconds(std::string_view text);

}  // namespace pg_ratelimit::detail
