// The admin port: GET /metrics (Prometheus text) and GET /healthz (JSON), on the first worker's thread.
#pragma once

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>

#include "http/worker.hpp"

namespace gate::admin {

class AdminServer {
  public:
    AdminServer(boost::asio::ip::tcp::acceptor acceptor, http::Shared &shared);
    void start();

  private:
    void accept();
    boost::asio::ip::tcp::acceptor acceptor_;
    http::Shared &shared_;
    boost::asio::steady_timer retry_timer_;  // after an accept error: a pause, not a spin (http/listener.hpp)
};

}  // namespace gate::admin
