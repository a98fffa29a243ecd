// One line per request on standard output, written with one write(2) so that the lines of several threads
// never interleave.
#pragma once

#include <string>

namespace gate::http {

struct AccessRecord {
    std::string client_ip{};
    std::string method{};
    std::string target{};
    unsigned version = 11;
    unsigned status = 0;
    std::uint64_t bytes_sent = 0;  // the answer's body bytes
    std::string decision{};        // allowed, denied, throttled, bypassed, would_deny, rejected, unlimited, ...
    std::string route{};           // the URL pattern, "-" for none
    double limiter_ms = -1;        // the database's time for the decision (-1: no call)
    double throttled_ms = 0;
    double total_ms = 0;
};

class AccessLog {
  public:
    explicit AccessLog(bool enabled) : enabled_(enabled) {}
    void write(const AccessRecord &record) const;
    // The line, for tests.
    static std::string format(const AccessRecord &record);

  private:
    bool enabled_;
};

}  // namespace gate::http
