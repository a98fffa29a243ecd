// Durations as the configuration writes them: "500ms", "1s", "1.5s", "1m", "1h", "1d".
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <string_view>

namespace gate::config {

// Parses a decimal number followed by one unit (ms, s, m, h, d): "500ms", "1.5s", "0s". Whole microseconds,
// rounded to the nearest. Returns nothing, and says why in *error, for anything else (no unit, a negative
// number, an unknown unit, more than 100 years).
std::optional<std::chrono::microseconds> parse_duration(std::string_view text, std::string *error);

// The map endpoint's numbers: a JSON number is seconds (the seed's webhook: "window": 1, "interval": 0.1).
std::optional<std::chrono::microseconds> seconds_to_duration(double seconds, std::string *error);

// "1s", "250ms", "1.5s": the shortest exact spelling, for messages and metric labels.
std::string format_duration(std::chrono::microseconds duration);

}  // namespace gate::config
