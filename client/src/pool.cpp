#include "pool.hpp"

#include <utility>

#include "pg_ratelimit/errors.hpp"

namespace pg_ratelimit::detail {

Pool::Pool(std::string conninfo, std::size_t size, std::chrono::milliseconds acquire_timeout, Setup setup)
    : conninfo_(std::move(conninfo)),
      size_(size == 0 ? 1 : size),
      acquire_timeout_(acquire_timeout),
      setup_(std::move(setup)) {
    idle_.push_back(open());
    open_ = 1;
}

std::unique_ptr<pqxx::connection> Pool::open() {
    auto connection = std::make_unique<pqxx::connection>(conninfo_);
    // libpqxx 6.4 quietly opens a new session when a broken connection is used again (the ROLLBACK of the
    // failed transaction does it, as would the next statement): without the setup below (the isolation
    // level), and a statement could then run outside the transaction the caller began, committing at once.
    // A pooled connection that broke is dropped instead, and a new one opened with the full setup; so a
    // call that lost its connection knows exactly which of its statements reached which session.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
    connection->inhibit_reactivation(true);  // deprecated in 6.4, but the only switch there is
#pragma GCC diagnostic pop
    if (setup_) setup_(*connection);
    return connection;
}

Pool::Lease Pool::acquire() {
    std::unique_lock<std::mutex> lock(mutex_);
    const bool ready = available_.wait_for(lock, acquire_timeout_, [this] { return !idle_.empty() || open_ < size_; });
    if (!ready) throw PoolTimeout("pg_ratelimit: no pooled connection became free within the acquire timeout");
    if (!idle_.empty()) {
        std::unique_ptr<pqxx::connection> connection = std::move(idle_.back());
        idle_.pop_back();
        return Lease(*this, std::move(connection));
    }
    ++open_;  // reserve the slot, then connect without holding the lock
    lock.unlock();
    try {
        return Lease(*this, open());
    } catch (...) {
        lock.lock();
        --open_;
        lock.unlock();
        available_.notify_one();
        throw;
    }
}

void Pool::release(std::unique_ptr<pqxx::connection> connection) noexcept {
    const bool keep = connection != nullptr && connection->is_open();
    if (!keep) connection.reset();  // close outside the lock
    {
        std::lock_guard<std::mutex> guard(mutex_);
        if (keep)
            idle_.push_back(std::move(connection));
        else
            --open_;
    }
    available_.notify_one();
}

void Pool::drop_idle() noexcept {
    std::vector<std::unique_ptr<pqxx::connection>> dropped;
    {
        std::lock_guard<std::mutex> guard(mutex_);
        dropped.swap(idle_);
        open_ -= dropped.size();
    }
    available_.notify_all();
    // `dropped` closes its connections here, outside the lock.
}

Pool::Lease::~Lease() {
    if (pool_ != nullptr && connection_ != nullptr) pool_->release(std::move(connection_));
}

}  // namespace pg_ratelimit::detail
