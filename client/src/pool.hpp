// A small, fixed-size pool of libpqxx connections.
//
// A libpqxx connection (and every transaction on it) may be used by one thread at a time, so each
// Limiter call leases a whole connection for the duration of its transaction. Connections are opened
// lazily up to the size; a connection found closed when its lease ends is dropped and a new one is
// opened when needed (libpqxx's own silent reconnection is switched off on them: pool.cpp).
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <pqxx/connection>
#include <string>
#include <vector>

namespace pg_ratelimit::detail {

class Pool {
  public:
    // Runs on every new connection before its first lease (e.g. to prepare statements); a connection
    // whose setup throws is discarded and the exception propagates.
    using Setup = std::function<void(pqxx::connection &)>;

    // Opens the first connection now (unless connect_now is false), so a bad conninfo fails at construction.
    Pool(std::string conninfo, std::size_t size, std::chrono::milliseconds acquire_timeout, Setup setup,
         bool connect_now = true);
    Pool(const Pool &) = delete;
    Pool &operator=(const Pool &) = delete;

    // Exclusive use of one connection; returns it to the pool when destroyed (destroy any transaction
    // on it first).
    class Lease {
      public:
        Lease(Lease &&other) noexcept = default;
        Lease &operator=(Lease &&) = delete;
        Lease(const Lease &) = delete;
        ~Lease();
        pqxx::connection &connection() const noexcept { return pooled_->connection; }
        // Bits the pool's owner keeps with this connection for as long as it lives (which of its
        // statements it registered on it); 0 for a new connection.
        std::uint32_t &marks() const noexcept { return pooled_->marks; }

      private:
        friend class Pool;
        // A pooled connection and what the pool's owner keeps with it.
        struct Pooled {
            explicit Pooled(const std::string &conninfo) : connection(conninfo) {}
            pqxx::connection connection;
            std::uint32_t marks = 0;
        };
        Lease(Pool &pool, std::unique_ptr<Pooled> pooled) noexcept : pool_(&pool), pooled_(std::move(pooled)) {}
        Pool *pool_;
        std::unique_ptr<Pooled> pooled_;
    };

    // Waits up to acquire_timeout for a free connection, opening one if the pool is not full.
    // Throws PoolTimeout, or what opening a connection throws (pqxx::broken_connection, ...).
    Lease acquire();

    // Closes every idle connection. After one connection was found lost the others are suspect too
    // (the server may have restarted); reopening is cheaper than failing on each in turn.
    void drop_idle() noexcept;

  private:
    using Pooled = Lease::Pooled;
    std::unique_ptr<Pooled> open();
    void release(std::unique_ptr<Pooled> pooled) noexcept;

    const std::string conninfo_;
    const std::size_t size_;
    const std::chrono::milliseconds acquire_timeout_;
    const Setup setup_;

    std::mutex mutex_;
    std::condition_variable available_;
    std::vector<std::unique_ptr<Pooled>> idle_;  // guarded by mutex_
    std::size_t open_ = 0;                       // idle + leased (+ being opened); guarded by mutex_
};

}  // namespace pg_ratelimit::detail
