// Values quoted in error messages.
#pragma once

#include "postgres_headers.hpp"

namespace pg_ratelimit {

// The shortest text that reads back as the same double, so that two different values never print alike
// ("cost 5.000000001 exceeds the capacity 5", not "5 exceeds 5"). palloc'd.
inline const char *number_text(double value) { return double_to_shortest_decimal(value); }

// A caller's text quoted in a message: at most 64 bytes of it (never cutting a character), with "..."
// when clipped, so that a megabyte of input does not become a megabyte of message and of server log.
inline const char *clipped_text(const char *text) {
    constexpr int MAX_QUOTED_BYTES = 64;
    const int length = static_cast<int>(strlen(text));
    if (length <= MAX_QUOTED_BYTES) return text;
    return psprintf("%.*s...", pg_mbcliplen(text, length, MAX_QUOTED_BYTES), text);
}

}  // namespace pg_ratelimit
