#include "http/upstream_pool.hpp"

#include <sys/socket.h>

#include <boost/asio/post.hpp>
#include <cerrno>

namespace gate::http {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;
using Clock = std::chrono::steady_clock;

namespace {

// Idle connections older than this are dropped rather than reused: backends commonly close idle
// keep-alive connections after a few seconds to a minute, and a reused dead one costs a failed request.
constexpr std::chrono::seconds MAX_IDLE{20};
constexpr std::size_t MAX_IDLE_PER_TARGET = 256;
constexpr std::chrono::seconds RESOLVE_TTL{30};

// Still open and silent: no EOF and no stray bytes waiting (a backend that closed shows EOF here).
bool still_open(Upstream &upstream) {
    char byte;
    const auto fd = upstream.stream.socket().native_handle();
    const ssize_t n = ::recv(fd, &byte, 1, MSG_PEEK | MSG_DONTWAIT);
    return n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK);
}

}  // namespace

UpstreamPool::UpstreamPool(asio::io_context &io, std::chrono::microseconds connect_timeout)
    : io_(io), connect_timeout_(connect_timeout), resolver_(io) {}

void UpstreamPool::acquire(const config::HostPort &target, Handler handler, bool fresh) {
    const std::string key = target.text();
    auto &idle = idle_[key];
    const auto now = Clock::now();
    while (!fresh && !idle.empty()) {
        auto upstream = std::move(idle.back());
        idle.pop_back();
        if (now - upstream->idle_since > MAX_IDLE || !still_open(*upstream)) continue;
        upstream->reused = true;
        auto holder = std::make_shared<std::unique_ptr<Upstream>>(std::move(upstream));
        asio::post(io_, [handler = std::move(handler), holder]() mutable { handler({}, std::move(*holder)); });
        return;
    }
    const auto cached = resolved_.find(key);
    if (cached != resolved_.end() && now - cached->second.at < RESOLVE_TTL) {
        connect(target, cached->second.endpoints, std::move(handler));
        return;
    }
    resolver_.async_resolve(target.host, std::to_string(target.port),
                            [this, target, key, handler = std::move(handler)](
                                boost::system::error_code ec, const tcp::resolver::results_type &endpoints) mutable {
                                if (ec) {
                                    handler(ec, nullptr);
                                    return;
                                }
                                resolved_[key] = Resolved{endpoints, Clock::now()};
                                connect(target, endpoints, std::move(handler));
                            });
}

void UpstreamPool::connect(const config::HostPort &target, const tcp::resolver::results_type &endpoints,
                           Handler handler) {
    auto upstream = std::make_shared<std::unique_ptr<Upstream>>(std::make_unique<Upstream>(io_));
    (*upstream)->target = target.text();
    (*upstream)->stream.expires_after(connect_timeout_);
    (*upstream)->stream.async_connect(endpoints, [upstream, handler = std::move(handler)](
                                                     boost::system::error_code ec, const tcp::endpoint &) mutable {
        if (ec) {
            handler(ec, nullptr);
            return;
        }
        // Small messages both ways: Nagle's delay would add up to 40 ms to an answer.
        (*upstream)->stream.socket().set_option(tcp::no_delay(true), ec);
        (*upstream)->stream.expires_never();
        handler({}, std::move(*upstream));
    });
}

void UpstreamPool::release(std::unique_ptr<Upstream> upstream) {
    auto &idle = idle_[upstream->target];
    if (idle.size() >= MAX_IDLE_PER_TARGET) return;
    upstream->stream.expires_never();
    upstream->idle_since = Clock::now();
    upstream->buffer.clear();
    idle.push_back(std::move(upstream));
}

}  // namespace gate::http
