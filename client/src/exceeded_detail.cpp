#include "exceeded_detail.hpp"

#include <cstdint>
#include <limits>

namespace pg_ratelimit::detail {
namespace {

// A cursor over the DETAIL's JSON object. Only what the server writes is accepted: string members
// escaped as PostgreSQL's escape_json() escapes them, and retry_after as digits, a point and six digits.
class Reader {
  public:
    explicit Reader(const std::string &text, std::size_t at) : text_(text), at_(at) {}

    [[nodiscard]] bool at_end() const { return at_ >= text_.size(); }

    bool consume(char c) {
        if (at_ >= text_.size() || text_[at_] != c) return false;
        ++at_;
        return true;
    }

    bool string(std::string *out) {
        if (!consume('"')) return false;
        out->clear();
        while (at_ < text_.size()) {
            const char c = text_[at_++];
            if (c == '"') return true;
            if (c != '\\') {
                out->push_back(c);
                continue;
            }
            if (at_ >= text_.size()) return false;
            const char escaped = text_[at_++];
            switch (escaped) {
                case '"':
                case '\\':
                case '/':
                    out->push_back(escaped);
                    break;
                case 'b':
                    out->push_back('\b');
                    break;
                case 'f':
                    out->push_back('\f');
                    break;
                case 'n':
                    out->push_back('\n');
                    break;
                case 'r':
                    out->push_back('\r');
                    break;
                case 't':
                    out->push_back('\t');
                    break;
                case 'u': {
                    // escape_json writes \uXXXX for control characters only (below 0x20): one byte.
                    unsigned value = 0;
                    for (int i = 0; i < 4; ++i) {
                        if (at_ >= text_.size()) return false;
                        const int digit = hex_digit(text_[at_++]);
                        if (digit < 0) return false;
                        value = value * 16 + static_cast<unsigned>(digit);
                    }
                    if (value >= 0x80) return false;
                    out->push_back(static_cast<char>(value));
                    break;
                }
                default:
                    return false;
            }
        }
        return false;  // unterminated
    }

    // Seconds written as <digits>.<six digits>: exactly, in microseconds, whatever the locale. The server
    // reports at most MAX_DURATION (extension/core/limit.hpp), 3162240000000.000000 s: 13 digits, which
    // still fit microseconds (int64) with room to spare. A larger value, which no server sends, saturates
    // at microseconds::max() instead of being refused: key() and limit() then survive, and a caller that
    // honours retry_after backs off for good rather than retrying an exhausted key in a loop.
    bool seconds(std::chrono::microseconds *out) {
        constexpr auto MAX = static_cast<std::uint64_t>(std::numeric_limits<std::chrono::microseconds::rep>::max());
        constexpr std::uint64_t MICROS_PER_SECOND = 1000000;
        std::uint64_t whole = 0;  // stops growing once past MAX / 10^6: saturated then, whatever follows
        int digits = 0;
        while (at_ < text_.size() && text_[at_] >= '0' && text_[at_] <= '9') {
            ++digits;
            const auto digit = static_cast<std::uint64_t>(text_[at_++] - '0');
            if (whole <= MAX / MICROS_PER_SECOND) whole = whole * 10 + digit;
        }
        if (digits == 0 || !consume('.')) return false;
        std::uint64_t fraction = 0;
        for (int i = 0; i < 6; ++i) {
            if (at_ >= text_.size() || text_[at_] < '0' || text_[at_] > '9') return false;
            fraction = fraction * 10 + static_cast<std::uint64_t>(text_[at_++] - '0');
        }
        const std::uint64_t micros =
            whole > (MAX - fraction) / MICROS_PER_SECOND ? MAX : whole * MICROS_PER_SECOND + fraction;
        *out = std::chrono::microseconds{static_cast<std::chrono::microseconds::rep>(micros)};
        return true;
    }

  private:
    static int hex_digit(char c) {
        if (c >= '0' && c <= '9') return c - '0';
        if (c >= 'a' && c <= 'f') return c - 'a' + 10;
        if (c >= 'A' && c <= 'F') return c - 'A' + 10;
        return -1;
    }

    const std::string &text_;
    std::size_t at_;
};

}  // namespace

std::optional<ExceededDetail> parse_exceeded_detail(const std::string &server_text) {
    const std::size_t first_end = server_text.find('\n');
    if (first_end == std::string::npos) return std::nullopt;
    const std::size_t line_end = server_text.find('\n', first_end + 1);
    const std::size_t brace = server_text.find('{', first_end + 1);
    if (brace == std::string::npos || (line_end != std::string::npos && brace > line_end)) return std::nullopt;
    ExceededDetail detail;
    // The members, in the order the server writes them.
    Reader in{server_text, brace};
    std::string name;
    if (!in.consume('{') || !in.string(&name) || name != "limit" || !in.consume(':') || !in.string(&detail.limit) ||
        !in.consume(',') || !in.string(&name) || name != "key" || !in.consume(':') || !in.string(&detail.key) ||
        !in.consume(',') || !in.string(&name) || name != "retry_after" || !in.consume(':') ||
        !in.seconds(&detail.retry_after) || !in.consume('}'))
        return std::nullopt;
    // The object ends its line.
    if (!in.consume('\n') && !in.at_end()) return std::nullopt;
    return detail;
}

}  // namespace pg_ratelimit::detail
