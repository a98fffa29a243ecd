#include "admin/metrics.hpp"

#include <cstdio>
#include <cstring>

namespace gate::admin {
namespace {

constexpr double BUCKET_SECONDS[] = {0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01,
                                     0.025,  0.05,    0.1,    0.25,  0.5,    1.0};
constexpr const char *OUTCOMES[] = {"allowed",  "denied",    "throttled", "bypassed",   "would_deny",
                                    "rejected", "unlimited", "cancelled", "unavailable"};
constexpr const char *LIMIT_OUTCOMES[] = {"allowed", "denied", "throttled"};

// Prometheus label values escape '\', '"' and newlines.
std::string label(const std::string &text) {
    std::string out;
    for (const char c : text) {
        if (c == '\\' || c == '"') out += '\\';
        if (c == '\n') {
            out += "\\n";
            continue;
        }
        out += c;
    }
    return out;
}

}  // namespace

Metrics::Metrics(const config::GateConfig &config) {
    for (const auto &route : config.routes) routes_.emplace_back(route.pattern);
    routes_.emplace_back("-");
    if (config.ratelimit) {
        for (const auto &limit : config.ratelimit->limits) limits_.emplace_back(limit.key);
    }
    limits_.emplace_back("map");
    const std::size_t outcomes = static_cast<std::size_t>(Outcome::count);
    const std::size_t limit_outcomes = static_cast<std::size_t>(LimitOutcome::count);
    requests_ = std::make_unique<Counter[]>(routes_.size() * outcomes);
    limit_decisions_ = std::make_unique<Counter[]>(routes_.size() * limits_.size() * limit_outcomes);
}

std::size_t Metrics::route_slot(int route) const {
    return route < 0 || static_cast<std::size_t>(route) >= routes_.size() - 1 ? routes_.size() - 1
                                                                              : static_cast<std::size_t>(route);
}

std::size_t Metrics::limit_slot(int limit) const {
    return limit < 0 || static_cast<std::size_t>(limit) >= limits_.size() - 1 ? limits_.size() - 1
                                                                              : static_cast<std::size_t>(limit);
}

void Metrics::request(int route, Outcome outcome) {
    requests_[route_slot(route) * static_cast<std::size_t>(Outcome::count) + static_cast<std::size_t>(outcome)]
        .fetch_add(1, std::memory_order_relaxed);
}

void Metrics::limit(int route, int limit, LimitOutcome outcome) {
    const std::size_t n = static_cast<std::size_t>(LimitOutcome::count);
    limit_decisions_[(route_slot(route) * limits_.size() + limit_slot(limit)) * n + static_cast<std::size_t>(outcome)]
        .fetch_add(1, std::memory_order_relaxed);
}

void Metrics::limiter_call(std::chrono::microseconds latency) {
    const double seconds = static_cast<double>(latency.count()) / 1e6;
    std::size_t bucket = 0;
    while (bucket < BUCKETS - 1 && seconds > BUCKET_SECONDS[bucket]) ++bucket;
    latency_buckets_[bucket].fetch_add(1, std::memory_order_relaxed);
    latency_count_.fetch_add(1, std::memory_order_relaxed);
    latency_sum_us_.fetch_add(static_cast<std::uint64_t>(latency.count()), std::memory_order_relaxed);
}

void Metrics::map_call(const char *result) {
    Counter &counter = std::strcmp(result, "fetched") == 0  ? map_fetched_
                       : std::strcmp(result, "cached") == 0 ? map_cached_
                                                            : map_failed_;
    counter.fetch_add(1, std::memory_order_relaxed);
}

void Metrics::refund(bool ok) { (ok ? refunds_ok_ : refunds_failed_).fetch_add(1, std::memory_order_relaxed); }

std::string Metrics::render(int ready) const {
    std::string out;
    const auto line = [&out](const std::string &text) { out += text + "\n"; };
    const std::size_t outcomes = static_cast<std::size_t>(Outcome::count);
    const std::size_t limit_outcomes = static_cast<std::size_t>(LimitOutcome::count);

    line("# HELP pg_ratelimit_gate_requests_total Requests received, by URL pattern (route).");
    line("# TYPE pg_ratelimit_gate_requests_total counter");
    for (std::size_t r = 0; r < routes_.size(); ++r) {
        std::uint64_t total = 0;
        for (std::size_t o = 0; o < outcomes; ++o) total += requests_[r * outcomes + o].load(std::memory_order_relaxed);
        line("pg_ratelimit_gate_requests_total{route=\"" + label(routes_[r]) + "\"} " + std::to_string(total));
    }
    line(
        "# HELP pg_ratelimit_gate_decisions_total Requests by route and what became of them (allowed, denied, "
        "throttled, bypassed, would_deny, rejected, unlimited, cancelled, unavailable).");
    line("# TYPE pg_ratelimit_gate_decisions_total counter");
    for (std::size_t r = 0; r < routes_.size(); ++r) {
        for (std::size_t o = 0; o < outcomes; ++o) {
            line("pg_ratelimit_gate_decisions_total{route=\"" + label(routes_[r]) + "\",decision=\"" + OUTCOMES[o] +
                 "\"} " + std::to_string(requests_[r * outcomes + o].load(std::memory_order_relaxed)));
        }
    }
    line(
        "# HELP pg_ratelimit_gate_limit_decisions_total Each limit's own decisions, by route and limit "
        "(limit \"map\": the map endpoint's limits).");
    line("# TYPE pg_ratelimit_gate_limit_decisions_total counter");
    for (std::size_t r = 0; r < routes_.size(); ++r) {
        for (std::size_t l = 0; l < limits_.size(); ++l) {
            for (std::size_t o = 0; o < limit_outcomes; ++o) {
                const auto value =
                    limit_decisions_[(r * limits_.size() + l) * limit_outcomes + o].load(std::memory_order_relaxed);
                line("pg_ratelimit_gate_limit_decisions_total{route=\"" + label(routes_[r]) + "\",limit=\"" +
                     label(limits_[l]) + "\",decision=\"" + LIMIT_OUTCOMES[o] + "\"} " + std::to_string(value));
            }
        }
    }
    line(
        "# HELP pg_ratelimit_gate_limiter_call_seconds Time from sending a decision to the database to its answer "
        "(retries included).");
    line("# TYPE pg_ratelimit_gate_limiter_call_seconds histogram");
    std::uint64_t cumulative = 0;
    char bound[32];
    for (std::size_t b = 0; b < BUCKETS; ++b) {
        cumulative += latency_buckets_[b].load(std::memory_order_relaxed);
        if (b < BUCKETS - 1) {
            std::snprintf(bound, sizeof bound, "%g", BUCKET_SECONDS[b]);
        } else {
            std::snprintf(bound, sizeof bound, "+Inf");
        }
        line(std::string("pg_ratelimit_gate_limiter_call_seconds_bucket{le=\"") + bound + "\"} " +
             std::to_string(cumulative));
    }
    char sum[64];
    std::snprintf(sum, sizeof sum, "%.6f", static_cast<double>(latency_sum_us_.load(std::memory_order_relaxed)) / 1e6);
    line(std::string("pg_ratelimit_gate_limiter_call_seconds_sum ") + sum);
    line("pg_ratelimit_gate_limiter_call_seconds_count " +
         std::to_string(latency_count_.load(std::memory_order_relaxed)));
    line("# HELP pg_ratelimit_gate_map_endpoint_total Map endpoint answers: fetched, cached, failed.");
    line("# TYPE pg_ratelimit_gate_map_endpoint_total counter");
    line("pg_ratelimit_gate_map_endpoint_total{result=\"fetched\"} " + std::to_string(map_fetched_.load()));
    line("pg_ratelimit_gate_map_endpoint_total{result=\"cached\"} " + std::to_string(map_cached_.load()));
    line("pg_ratelimit_gate_map_endpoint_total{result=\"failed\"} " + std::to_string(map_failed_.load()));
    line("# HELP pg_ratelimit_gate_refunds_total Reservations given back (a throttled client went away).");
    line("# TYPE pg_ratelimit_gate_refunds_total counter");
    line("pg_ratelimit_gate_refunds_total{result=\"ok\"} " + std::to_string(refunds_ok_.load()));
    line("pg_ratelimit_gate_refunds_total{result=\"failed\"} " + std::to_string(refunds_failed_.load()));
    line("# HELP pg_ratelimit_gate_database_connections_ready Connections to PostgreSQL ready now.");
    line("# TYPE pg_ratelimit_gate_database_connections_ready gauge");
    line("pg_ratelimit_gate_database_connections_ready " + std::to_string(ready));
    return out;
}

}  // namespace gate::admin
