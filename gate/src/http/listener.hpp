// Accepting connections: one acceptor, each new connection handed to the next worker in turn.
#pragma once

#include <boost/asio/ip/tcp.hpp>
#include <memory>
#include <vector>

#include "config/address.hpp"
#include "http/worker.hpp"

namespace gate::http {

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
};

}  // namespace gate::http
