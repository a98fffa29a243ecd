#include "http/access_log.hpp"

#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <ctime>

namespace gate::http {
namespace {

std::string now_utc() {
    const auto now = std::chrono::system_clock::now();
    const std::time_t seconds = std::chrono::system_clock::to_time_t(now);
    const auto millis = std::chrono::duration_cast<std::chrono::milliseconds>(now.time_since_epoch()).count() % 1000;
    std::tm tm{};
    gmtime_r(&seconds, &tm);
    char text[80];
    std::snprintf(text, sizeof text, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900, tm.tm_mon + 1,
                  tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, static_cast<int>(millis));
    return text;
}

// Quotes and control bytes of the request line would let a client forge log lines.
std::string clean(const std::string &text) {
    std::string out;
    for (const char c : text) {
        const auto byte = static_cast<unsigned char>(c);
        out += (byte < 0x20 || byte == 0x7f || c == '"') ? '?' : c;
    }
    return out;
}

}  // namespace

std::string AccessLog::format(const AccessRecord &r) {
    char numbers[200];
    std::snprintf(numbers, sizeof numbers, " %u %llu decision=%s limiter_ms=%.3f throttled_ms=%.1f total_ms=%.3f",
                  r.status, static_cast<unsigned long long>(r.bytes_sent),
                  r.decision.empty() ? "-" : r.decision.c_str(), r.limiter_ms, r.throttled_ms, r.total_ms);
    return now_utc() + " " + r.client_ip + " \"" + clean(r.method) + " " + clean(r.target) + " HTTP/" +
           std::to_string(r.version / 10) + "." + std::to_string(r.version % 10) + "\"" + numbers + " route=\"" +
           clean(r.route) + "\"\n";
}

void AccessLog::write(const AccessRecord &record) const {
    if (!enabled_) return;
    const std::string line = format(record);
    // One write: atomic for a pipe up to PIPE_BUF bytes, and in practice for a file or terminal.
    const ssize_t written = ::write(STDOUT_FILENO, line.data(), line.size());
    (void)written;  // a full or closed stdout must not stop the proxy
}

}  // namespace gate::http
