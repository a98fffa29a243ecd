#include "seconds_text.hpp"

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <limits>
#include <stdexcept>
#include <string>

namespace pg_ratelimit::detail {
namespace {

using Rep = std::chrono::microseconds::rep;
constexpr Rep MAX = std::numeric_limits<Rep>::max();
constexpr Rep MIN = std::numeric_limits<Rep>::min();
constexpr std::uint64_t CAP = static_cast<std::uint64_t>(MAX) + 1;  // |MIN|: larger magnitudes saturate
constexpr std::uint64_t MICROS_PER_SECOND = 1'000'000;

bool is_digit(char c) { return c >= '0' && c <= '9'; }
std::uint64_t digit(char c) { return static_cast<std::uint64_t>(c - '0'); }

// The float8 forms ("1.5e+20", "Infinity", "-Infinity"): through double, saturating.
std::chrono::microseconds via_double(std::string_view text) {
    const std::string copy(text);
    char *end = nullptr;
    const double seconds = std::strtod(copy.c_str(), &end);  // overflow: +-HUGE_VAL; underflow: about 0
    if (copy.empty() || end != copy.c_str() + copy.size() || std::isnan(seconds))
        throw std::invalid_argument("pg_ratelimit: not a number of seconds: \"" + copy + "\"");
    const double micros = std::round(seconds * 1e6);
    if (micros >= static_cast<double>(MAX)) return std::chrono::microseconds{MAX};
    if (micros <= static_cast<double>(MIN)) return std::chrono::microseconds{MIN};
    return std::chrono::microseconds{static_cast<Rep>(micros)};
}

}  // namespace

std::chrono::microseconds micros_from_seconds(std::string_view text) {
    // The numeric form, [-]digits[.digits], is converted exactly; anything else goes through double.
    const bool negative = !text.empty() && text[0] == '-';
    std::size_t at = negative ? 1 : 0;
    const std::size_t digits_start = at;
    std::uint64_t seconds = 0;
    bool saturated = false;
    for (; at < text.size() && is_digit(text[at]); ++at) {
        if (saturated) continue;
        seconds = seconds * 10 + digit(text[at]);
        saturated = seconds > CAP / MICROS_PER_SECOND;
    }
    if (at == digits_start) return via_double(text);

    std::uint64_t fraction = 0;  // the first six decimals, in microseconds
    std::uint64_t scale = MICROS_PER_SECOND;
    bool round_up = false;  // the seventh decimal is 5 or more
    if (at < text.size() && text[at] == '.') {
        for (++at; at < text.size() && is_digit(text[at]); ++at) {
            if (scale > 1) {
                scale /= 10;
                fraction += digit(text[at]) * scale;
            } else if (scale == 1) {
                round_up = text[at] >= '5';
                scale = 0;
            }
        }
    }
    if (at != text.size()) return via_double(text);

    // seconds <= CAP / 10^6 unless saturated, so this cannot wrap around.
    const std::uint64_t magnitude = saturated ? CAP : seconds * MICROS_PER_SECOND + fraction + (round_up ? 1 : 0);
    if (magnitude >= CAP) return std::chrono::microseconds{negative ? MIN : MAX};
    const auto value = static_cast<Rep>(magnitude);
    return std::chrono::microseconds{negative ? -value : value};
}

}  // namespace pg_ratelimit::detail
