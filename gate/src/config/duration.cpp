#include "config/duration.hpp"

#include <cmath>
#include <cstdio>
#include <cstdlib>

namespace gate::config {
namespace {

// 100 years: longer than any window or throttle makes sense, short enough never to overflow microseconds.
constexpr double MAX_SECONDS = 100.0 * 366 * 86400;

std::optional<std::chrono::microseconds> from_seconds(double seconds, std::string *error) {
    if (!std::isfinite(seconds) || seconds < 0) {
        *error = "a duration must be a number of 0 or more";
        return std::nullopt;
    }
    if (seconds > MAX_SECONDS) {
        *error = "a duration may not exceed 100 years";
        return std::nullopt;
    }
    return std::chrono::microseconds{static_cast<std::int64_t>(std::llround(seconds * 1e6))};
}

}  // namespace

std::optional<std::chrono::microseconds> parse_duration(std::string_view text, std::string *error) {
    std::size_t digits = 0;
    bool dot = false;
    while (digits < text.size() && ((text[digits] >= '0' && text[digits] <= '9') || (text[digits] == '.' && !dot))) {
        dot = dot || text[digits] == '.';
        ++digits;
    }
    const std::string number(text.substr(0, digits));
    const std::string_view unit = text.substr(digits);
    if (number.empty() || number == ".") {
        *error = "\"" + std::string(text) + "\" is not a duration (write a number and a unit: 500ms, 1s, 1m, 1h, 1d)";
        return std::nullopt;
    }
    double scale = 0;
    if (unit == "ms") {
        scale = 1e-3;
    } else if (unit == "s") {
        scale = 1;
    } else if (unit == "m") {
        scale = 60;
    } else if (unit == "h") {
        scale = 3600;
    } else if (unit == "d") {
        scale = 86400;
    } else {
        *error = "\"" + std::string(text) + "\" is not a duration: " +
                 (unit.empty() ? std::string("it has no unit") : "unknown unit \"" + std::string(unit) + "\"") +
                 " (write a number and a unit: 500ms, 1s, 1m, 1h, 1d)";
        return std::nullopt;
    }
    return from_seconds(std::strtod(number.c_str(), nullptr) * scale, error);
}

std::optional<std::chrono::microseconds> seconds_to_duration(double seconds, std::string *error) {
    return from_seconds(seconds, error);
}

std::string format_duration(std::chrono::microseconds duration) {
    const std::int64_t us = duration.count();
    struct Unit {
        std::int64_t micros;
        const char *name;
    };
    for (const Unit unit : {Unit{86'400'000'000, "d"}, Unit{3'600'000'000, "h"}, Unit{60'000'000, "m"},
                            Unit{1'000'000, "s"}, Unit{1'000, "ms"}}) {
        if (us != 0 && us % unit.micros == 0) return std::to_string(us / unit.micros) + unit.name;
    }
    if (us == 0) return "0s";
    char text[64];
    std::snprintf(text, sizeof text, "%.6gs", static_cast<double>(us) / 1e6);
    return text;
}

}  // namespace gate::config
