#include "http/worker.hpp"

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <ctime>

#include "limiter/statements.hpp"
#include "map/map_client.hpp"

namespace gate::http {

namespace {
constexpr std::size_t MAP_CACHE_ENTRIES = 100'000;
}  // namespace

Shared::Shared(config::GateConfig c) : config(std::move(c)), metrics(config), access_log(config.access_log) {
    if (config.ratelimit) {
        limits.reserve(config.ratelimit->limits.size());
        for (const auto &limit : config.ratelimit->limits) {
            auto spec = limiter::spec_of(limit);
            auto twin = limiter::monitoring_twin(spec);
            limits.push_back({&limit, std::move(spec), std::move(twin)});
        }
        const auto &jwt_settings = config.ratelimit->jwt;
        if (!jwt_settings.hs256_secret.empty() || !jwt_settings.public_keys.empty()) jwt.emplace(jwt_settings);
        if (config.ratelimit->map_endpoint) {
            map_cache = std::make_unique<map::MapCache>(config.ratelimit->map_endpoint->cache_ttl, MAP_CACHE_ENTRIES);
        }
    }
    for (const auto &route : config.routes) {
        std::vector<const limiter::ConfiguredLimit *> mine;
        for (const std::size_t index : route.limits) mine.push_back(&limits[index]);
        route_limits.push_back(std::move(mine));
    }
}

Worker::Worker(Shared &s, std::size_t connections) : shared(s), upstreams(io, s.config.backend_timeout) {
    if (!s.config.ratelimit) return;
    const auto &limiter_config = s.config.ratelimit->limiter;
    limiter::PoolSettings settings;
    settings.connection.conninfo = limiter_config.conninfo;
    settings.connection.pipeline = limiter_config.pipeline;
    settings.connection.statements = limiter::prepared_statements(limiter_config.schema);
    settings.size = connections;
    settings.log = [this](const std::string &line) { log(line, false); };
    settings.ready_gauge = &s.db_ready;
    pool = std::make_unique<limiter::Pool>(io, std::move(settings));
    limiter::DeciderSettings decider_settings;
    decider_settings.timeout = limiter_config.timeout;
    decider = std::make_unique<limiter::Decider>(io, *pool, decider_settings);
    definitions = std::make_unique<limiter::Definitions>(*pool, limiter_config.schema, limiter_config.timeout);
    if (s.defined_at_start) {
        std::vector<limiter::LimitSpec> specs;
        for (const auto &limit : s.limits) specs.push_back(limit.spec);
        definitions->assume_defined(specs);
    }
    if (s.config.ratelimit->map_endpoint) {
        map_client =
            std::make_unique<map::MapClient>(upstreams, *s.config.ratelimit->map_endpoint, s.metrics, *s.map_cache);
    }
}

Worker::~Worker() = default;

void Worker::log(const std::string &line, bool rate_limited) const {
    using Clock = std::chrono::steady_clock;
    static thread_local Clock::time_point window{};
    static thread_local int written = 0;
    static thread_local int suppressed = 0;
    const auto now = Clock::now();
    std::string text;
    if (now - window >= std::chrono::seconds(1)) {
        if (suppressed > 0)
            text += "pg_ratelimit_gate: (" + std::to_string(suppressed) + " more such lines suppressed)\n";
        window = now;
        written = 0;
        suppressed = 0;
    }
    if (rate_limited && written >= 20) {
        ++suppressed;
        return;
    }
    if (rate_limited) ++written;
    const std::time_t t = std::time(nullptr);
    std::tm tm{};
    gmtime_r(&t, &tm);
    char stamp[32];
    std::strftime(stamp, sizeof stamp, "%Y-%m-%dT%H:%M:%SZ", &tm);
    text += std::string(stamp) + " pg_ratelimit_gate: " + line + "\n";
    const ssize_t n = ::write(STDERR_FILENO, text.data(), text.size());
    (void)n;
}

}  // namespace gate::http
