// HTTP fields: Retry-After (RFC 9110, delay-seconds) and the IETF httpapi RateLimit / RateLimit-Policy
// fields (draft-ietf-httpapi-ratelimit-headers), whose values are structured fields (RFC 8941).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>

#include "pg_ratelimit/decision.hpp"
#include "random.hpp"

namespace pg_ratelimit {
namespace {

constexpr std::int64_t MAX_SF_INTEGER = 999'999'999'999'999;  // RFC 8941: at most 15 digits

// Whole seconds, rounded up: a client that waits this long is never early.
std::int64_t ceil_seconds(std::chrono::microseconds duration) {
    if (duration.count() <= 0) return 0;
    const std::int64_t micros = duration.count();
    return std::min(micros / 1'000'000 + (micros % 1'000'000 != 0), MAX_SF_INTEGER);  // no overflow near max
}

std::int64_t sf_integer(std::int64_t value) { return std::clamp<std::int64_t>(value, 0, MAX_SF_INTEGER); }

// An sf-string holds printable ASCII only, with '"' and '\' escaped.
std::string sf_string(const std::string &text) {
    std::string out = "\"";
    for (const char c : text) {
        const auto byte = static_cast<unsigned char>(c);
        if (c == '"' || c == '\\') out += '\\';
        out += (byte >= 0x20 && byte <= 0x7e) ? c : '?';
    }
    return out + '"';
}

std::vector<HttpField> fields(const Decision &decision, std::chrono::seconds jitter) {
    std::vector<HttpField> out;
    if (decision.policy) out.push_back({"RateLimit-Policy", ratelimit_policy_field(decision)});
    out.push_back({"RateLimit", ratelimit_field(decision)});
    if (!decision.allowed) {
        const std::int64_t seconds = ceil_seconds(decision.retry_after) + detail::uniform_up_to(jitter).count();
        out.push_back({"Retry-After", std::to_string(sf_integer(seconds))});
    }
    return out;
}

}  // namespace

std::string ratelimit_policy_field(const Decision &decision) {
    if (!decision.policy) return "";
    // A capacity can be fractional; a client can only ever spend its whole units.
    const double quota = std::floor(std::min(decision.policy->capacity, static_cast<double>(MAX_SF_INTEGER)));
    const std::int64_t window = std::max<std::int64_t>(1, ceil_seconds(decision.policy->period));
    return sf_string(decision.limit) + ";q=" + std::to_string(sf_integer(static_cast<std::int64_t>(quota))) +
           ";w=" + std::to_string(window);
}

std::string ratelimit_field(const Decision &decision) {
    return sf_string(decision.limit) + ";r=" + std::to_string(sf_integer(decision.remaining)) +
           ";t=" + std::to_string(ceil_seconds(decision.reset_after));
}

std::string retry_after_field(const Decision &decision) { return std::to_string(ceil_seconds(decision.retry_after)); }

std::vector<HttpField> Decision::headers() const { return fields(*this, std::chrono::seconds{0}); }

std::vector<HttpField> Decision::headers(std::chrono::seconds max_jitter) const { return fields(*this, max_jitter); }

}  // namespace pg_ratelimit
