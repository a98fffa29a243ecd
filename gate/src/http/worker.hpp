// What every I/O thread shares (read-only after start) and what each has of its own: an io_context run by
// that one thread, its database pool, decider and definitions, its backend connections, its map cache.
// A client connection lives on one worker for its whole life, so nothing of a worker needs a lock.
#pragma once

#include <atomic>
#include <boost/asio/io_context.hpp>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "admin/metrics.hpp"
#include "config/config.hpp"
#include "http/access_log.hpp"
#include "http/upstream_pool.hpp"
#include "jwt/verify.hpp"
#include "limiter/decider.hpp"
#include "limiter/definitions.hpp"
#include "limiter/plan.hpp"
#include "limiter/pool.hpp"
#include "map/map_cache.hpp"

namespace gate::map {
class MapClient;
}

namespace gate::http {

struct Shared {
    explicit Shared(config::GateConfig c);

    config::GateConfig config;
    std::vector<limiter::ConfiguredLimit> limits;                             // the file's limits, in order
    std::vector<std::vector<const limiter::ConfiguredLimit *>> route_limits;  // per route
    std::optional<jwt::JwtVerifier> jwt{};
    admin::Metrics metrics;
    AccessLog access_log;
    std::atomic<int> db_ready{0};
    std::unique_ptr<map::MapCache> map_cache{};  // with a map endpoint: its answers, for every thread
    bool defined_at_start = false;
};

struct Worker {
    Worker(Shared &shared, std::size_t connections);
    ~Worker();
    Worker(const Worker &) = delete;
    Worker &operator=(const Worker &) = delete;

    // A line on standard error. Lines about requests (rate_limited) are held to 20 a second per thread, so
    // that an outage under load does not write one per request; events (a connection lost, back) never are.
    void log(const std::string &line, bool rate_limited = true) const;

    Shared &shared;
    boost::asio::io_context io{1};  // one thread: Asio takes no locks
    std::unique_ptr<limiter::Pool> pool{};
    std::unique_ptr<limiter::Decider> decider{};
    std::unique_ptr<limiter::Definitions> definitions{};
    UpstreamPool upstreams;
    std::unique_ptr<map::MapClient> map_client{};
};

}  // namespace gate::http
