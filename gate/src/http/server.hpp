// The gate's process: its workers (one thread and io_context each), the listener, the admin endpoint.
#pragma once

#include <memory>
#include <vector>

#include "http/listener.hpp"
#include "http/worker.hpp"

namespace gate::admin {
class AdminServer;
}

namespace gate::http {

class Server {
  public:
    // Binds the listening addresses (throws std::runtime_error when one cannot be).
    explicit Server(Shared &shared);
    ~Server();
    // Runs until SIGINT or SIGTERM.
    void run();
    [[nodiscard]] std::size_t threads() const { return workers_.size(); }
    [[nodiscard]] std::size_t connections_per_thread() const { return connections_per_thread_; }

  private:
    Shared &shared_;
    std::size_t connections_per_thread_ = 0;
    std::vector<std::unique_ptr<Worker>> workers_;
    std::unique_ptr<Listener> listener_;
    std::unique_ptr<admin::AdminServer> admin_;
};

}  // namespace gate::http
