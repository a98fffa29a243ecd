#include "limiter/plan.hpp"

#include "request_fields/extract.hpp"

namespace gate::limiter {
namespace {

bool usable(const std::string &key) {
    return key.size() <= MAX_KEY_BYTES && key.find('\0') == std::string::npos && valid_utf8(key);
}

}  // namespace

bool valid_utf8(std::string_view text) {
    // RFC 3629 (PostgreSQL's UTF8 check): no overlong forms, no surrogates, nothing above U+10FFFF.
    const auto *p = reinterpret_cast<const unsigned char *>(text.data());
    const auto *const end = p + text.size();
    while (p < end) {
        const unsigned char c = *p;
        if (c < 0x80) {
            ++p;
            continue;
        }
        std::size_t length = 0;
        unsigned char low = 0x80;
        unsigned char high = 0xBF;
        if (c >= 0xC2 && c <= 0xDF) {
            length = 2;
        } else if (c >= 0xE0 && c <= 0xEF) {
            length = 3;
            if (c == 0xE0) low = 0xA0;   // overlong
            if (c == 0xED) high = 0x9F;  // surrogates
        } else if (c >= 0xF0 && c <= 0xF4) {
            length = 4;
            if (c == 0xF0) low = 0x90;   // overlong
            if (c == 0xF4) high = 0x8F;  // above U+10FFFF
        } else {
            return false;  // a continuation byte first, C0/C1 (overlong), F5..FF
        }
        if (static_cast<std::size_t>(end - p) < length) return false;
        if (p[1] < low || p[1] > high) return false;
        for (std::size_t i = 2; i < length; ++i) {
            if (p[i] < 0x80 || p[i] > 0xBF) return false;
        }
        p += length;
    }
    return true;
}

Plan make_plan(const std::vector<const ConfiguredLimit *> &route_limits, const request_fields::RequestView &request,
               const std::vector<MapLimit> &map_limits, bool monitoring) {
    Plan plan;
    for (const ConfiguredLimit *limit : route_limits) {
        const config::LimitConfig &config = *limit->config;
        std::string key = config.key;
        if (config.request_field) {
            auto value = request_fields::extract(*config.request_field, request);
            if (!value) {
                switch (config.on_missing) {
                    case config::OnMissing::skip:
                        continue;
                    case config::OnMissing::reject:
                        plan.rejected = config.key;
                        return plan;
                    case config::OnMissing::constant:
                        value = config.missing_key;
                        break;
                }
            }
            key = std::move(*value);
        }
        if (!usable(key)) {
            plan.bad_key = config.key;
            return plan;
        }
        plan.limits.push_back({monitoring ? &limit->monitor_spec : &limit->spec, std::move(key), config.key});
    }
    for (const MapLimit &limit : map_limits) {
        if (!usable(limit.key)) {
            plan.bad_key = limit.display;
            return plan;
        }
        plan.limits.push_back({monitoring ? &limit.monitor_spec : &limit.spec, limit.key, limit.display});
    }
    return plan;
}

}  // namespace gate::limiter
