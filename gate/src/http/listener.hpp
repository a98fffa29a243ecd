// Accepting connections: one acceptor, each new connection handed to the next worker in turn.
// An accept that fails (out of file descriptors: the pending connection stays in the backlog, and the next
// accept would fail at once again) is tried again after ACCEPT_RETRY_DELAY, not at once.
#pragma once

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <memory>
#include <vector>

#include "config/address.hpp"
#include "http/worker.hpp"

namespace gate::http {

constexpr std::chrono::milliseconds ACCEPT_RETRY_DELAY{100};

// Binds address (throws std::runtime_error naming it when it cannot).
boost::asio::ip::tcp::acceptor bind_acceptor(boost::asio::io_context &io, const config::HostPort &address);

class Listener {
  public:
    Listener(boost::asio::ip::tcp::acceptor acceptor, std::vector<std::unique_ptr<Worker>> &workers);
    void start();

  private:
    void accept();
    boost::asio::ip::tcp::acceptor acceptor_;
    std::vector<std::unique_ptr<Worker>> &workers_;
    std::size_t next_ = 0;
    // After an accept error (EMFILE, ENFILE, ENOBUFS...): a pause before the next try, instead of a loop
    // that spins on a connection it cannot take; logged once until an accept succeeds again.
    boost::asio::steady_timer retry_timer_;
    bool failing_ = false;
};

}  // namespace gate::http
