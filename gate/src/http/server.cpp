#include "http/server.hpp"

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/signal_set.hpp>
#include <thread>

#include "admin/admin_server.hpp"

namespace gate::http {

namespace asio = boost::asio;

Server::Server(Shared &shared) : shared_(shared) {
    std::size_t threads = shared.config.threads > 0 ? static_cast<std::size_t>(shared.config.threads)
                                                    : std::max(1u, std::thread::hardware_concurrency());
    if (shared.config.ratelimit) {
        // pool_size connections in all, shared out over the threads (each thread at least one).
        const auto pool_size = static_cast<std::size_t>(shared.config.ratelimit->limiter.pool_size);
        threads = std::min(threads, pool_size);
        connections_per_thread_ = pool_size / threads;
    }
    for (std::size_t i = 0; i < threads; ++i)
        workers_.push_back(std::make_unique<Worker>(shared, connections_per_thread_));
    listener_ = std::make_unique<Listener>(bind_acceptor(workers_[0]->io, shared.config.listen), workers_);
    if (shared.config.admin_listen) {
        admin_ =
            std::make_unique<admin::AdminServer>(bind_acceptor(workers_[0]->io, *shared.config.admin_listen), shared);
    }
}

Server::~Server() = default;

void Server::run() {
    for (auto &worker : workers_) {
        if (worker->pool) worker->pool->start();
    }
    listener_->start();
    if (admin_) admin_->start();
    asio::signal_set signals(workers_[0]->io, SIGINT, SIGTERM);
    signals.async_wait([this](boost::system::error_code, int) {
        for (auto &worker : workers_) worker->io.stop();
    });
    // A worker with nothing to do yet must not return from run().
    std::vector<asio::executor_work_guard<asio::io_context::executor_type>> keep_running;
    for (auto &worker : workers_) keep_running.push_back(asio::make_work_guard(worker->io));
    std::vector<std::thread> threads;
    for (std::size_t i = 1; i < workers_.size(); ++i) {
        threads.emplace_back([worker = workers_[i].get()] { worker->io.run(); });
    }
    workers_[0]->io.run();
    for (auto &thread : threads) thread.join();
}

}  // namespace gate::http
