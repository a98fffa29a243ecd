// A small pool of asynchronous PostgreSQL connections, one per I/O thread (each thread has its own pool
// and io_context: nothing is shared, nothing locked). Calls go to the least loaded ready connection, wait in
// a queue while every connection is busy, and fail at once when none is up (failure_mode then applies, with
// no wait). Broken connections reconnect by themselves, with jittered exponential backoff.
#pragma once

#include <atomic>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <deque>
#include <functional>
#include <memory>
#include <random>
#include <vector>

#include "limiter/pg_connection.hpp"

namespace gate::limiter {

struct PoolSettings {
    ConnectionSettings connection{};
    std::size_t size = 2;
    std::chrono::milliseconds reconnect_min{50};
    std::chrono::milliseconds reconnect_max{2000};
    // Told each time a connection breaks or fails to connect (the log), and when one is ready again.
    std::function<void(const std::string &what)> log{};
    std::atomic<int> *ready_gauge = nullptr;  // connections ready, over every pool (/healthz, /metrics)
};

class Pool : private ConnectionEvents {
  public:
    Pool(boost::asio::io_context &io, PoolSettings settings);
    ~Pool() override;
    Pool(const Pool &) = delete;
    Pool &operator=(const Pool &) = delete;

    void start();
    // Runs the call on some connection; call->done runs later on this pool's io_context, exactly once.
    void submit(std::unique_ptr<DbCall> call);
    [[nodiscard]] bool any_ready() const;
    [[nodiscard]] std::size_t ready_count() const;

  private:
    struct Slot {
        std::shared_ptr<PgConnection> connection;
        int failures = 0;
        bool was_ready = false;
        std::unique_ptr<boost::asio::steady_timer> reconnect_timer;
    };

    void on_ready(PgConnection &connection) override;
    void on_broken(PgConnection &connection, const std::string &why) override;
    void on_capacity(PgConnection &connection) override;
    Slot &slot_of(PgConnection &connection);
    void dispatch();
    void sweep();
    void fail(std::unique_ptr<DbCall> call, DbFailure failure, const std::string &why);
    [[nodiscard]] bool any_connecting() const;

    boost::asio::io_context &io_;
    PoolSettings settings_;
    std::vector<Slot> slots_;
    std::deque<std::unique_ptr<DbCall>> queue_;
    boost::asio::steady_timer sweeper_;
    std::minstd_rand random_;
};

}  // namespace gate::limiter
