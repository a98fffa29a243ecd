// Connections to backends (and to the map endpoint), kept alive and reused per target, per I/O thread.
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "config/address.hpp"

namespace gate::http {

struct Upstream {
    explicit Upstream(boost::asio::io_context &io) : stream(io) {}
    boost::beast::tcp_stream stream;
    boost::beast::flat_buffer buffer;
    std::string target{};  // "host:port"
    bool reused = false;   // taken from the idle set: the backend may have closed it meanwhile
    std::chrono::steady_clock::time_point idle_since{};
};

class UpstreamPool {
  public:
    using Handler = std::function<void(boost::system::error_code, std::unique_ptr<Upstream>)>;

    UpstreamPool(boost::asio::io_context &io, std::chrono::microseconds connect_timeout);

    // An idle connection to target if one is still open, else a new one. The handler runs on this io_context,
    // never inside acquire(). fresh: skip the idle ones (a retry after a reused one failed).
    void acquire(const config::HostPort &target, Handler handler, bool fresh = false);
    // Back to the idle set, for the next request to the same target.
    void release(std::unique_ptr<Upstream> upstream);

  private:
    struct Resolved {
        boost::asio::ip::tcp::resolver::results_type endpoints;
        std::chrono::steady_clock::time_point at;
    };
    void connect(const config::HostPort &target, const boost::asio::ip::tcp::resolver::results_type &endpoints,
                 Handler handler);

    boost::asio::io_context &io_;
    std::chrono::microseconds connect_timeout_;
    boost::asio::ip::tcp::resolver resolver_;
    std::unordered_map<std::string, std::vector<std::unique_ptr<Upstream>>> idle_;
    std::unordered_map<std::string, Resolved> resolved_;
};

}  // namespace gate::http
