// Counters for /metrics (Prometheus text format 0.0.4), updated from every I/O thread with relaxed atomic
// additions: no lock on the request path.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "config/config.hpp"

namespace gate::admin {

// What became of a request.
enum class Outcome {
    allowed,      // decided, forwarded
    denied,       // 429
    throttled,    // reserved, forwarded after the delay
    bypassed,     // the limiter could not decide and failure_mode open forwarded it, saying so
    would_deny,   // monitoring mode: forwarded, would have been denied
    rejected,     // 400: a field on_missing: reject, or a key the database cannot take
    unlimited,    // no limit applies (plugin off, or every field missing and skipped)
    cancelled,    // throttled, and the client went away during the delay (its reservation given back)
    unavailable,  // the limiter could not decide and failure_mode closed answered 503
    count
};
enum class LimitOutcome { allowed, denied, throttled, count };

class Metrics {
  public:
    explicit Metrics(const config::GateConfig &config);

    void request(int route, Outcome outcome);                // route -1: no URL matched (404)
    void limit(int route, int limit, LimitOutcome outcome);  // limit -1: one of the map endpoint's
    void limiter_call(std::chrono::microseconds latency);
    void map_call(const char *result);  // "fetched", "cached", "failed"
    void refund(bool ok);

    // The exposition text. ready: database connections ready now.
    [[nodiscard]] std::string render(int ready) const;

  private:
    using Counter = std::atomic<std::uint64_t>;
    std::size_t route_slot(int route) const;
    std::size_t limit_slot(int limit) const;

    std::vector<std::string> routes_;             // patterns, then "-" for no route
    std::vector<std::string> limits_;             // keys, then "map"
    std::unique_ptr<Counter[]> requests_;         // routes x Outcome
    std::unique_ptr<Counter[]> limit_decisions_;  // routes x limits x LimitOutcome
    static constexpr std::size_t BUCKETS = 14;
    Counter latency_buckets_[BUCKETS] = {};
    Counter latency_count_{0};
    Counter latency_sum_us_{0};
    Counter map_fetched_{0}, map_cached_{0}, map_failed_{0};
    Counter refunds_ok_{0}, refunds_failed_{0};
};

}  // namespace gate::admin
