#include "pool.hpp"

#include <utility>

#include "pg_ratelimit/errors.hpp"
#include "pqxx_compat.hpp"

namespace pg_ratelimit::detail {

Pool::Pool(std::string conninfo, std::size_t size, std::chrono::milliseconds acquire_timeout, Setup setup,
           bool connect_now)
    : conninfo_(std::move(conninfo)),
      size_(size == 0 ? 1 : size),
      acquire_timeout_(acquire_timeout),
      setup_(std::move(setup)) {
    if (!connect_now) return;
    idle_.push_back(open());
    open_ = 1;
}

std::unique_ptr<Pool::Pooled> Pool::open() {
    auto pooled = std::make_unique<Pooled>(conninfo_);
    // libpqxx 6.4 quietly opens a new session when a broken connection is used again (the ROLLBACK of the
    // failed transaction does it, as would the next statement): without the setup below (the isolation
    // level), and a statement could then run outside the transaction the caller began, committing at once.
    // A pooled connection that broke is dropped instead, and a new one opened with the full setup; so a
    // call that lost its connection knows exactly which of its statements reached which session. (7 and 8
    // never reopen a connection by themselves.)
    compat::disable_reactivation(pooled->connection);
    if (setup_) setup_(pooled->connection);
    return pooled;
}

Pool::Lease Pool::acquire() {
    std::unique_lock<std::mutex> lock(mutex_);
    const bool ready = available_.wait_for(lock, acquire_timeout_, [this] { return !idle_.empty() || open_ < size_; });
    if (!ready) throw PoolTimeout("pg_ratelimit: no pooled connection became free within the acquire timeout");
    if (!idle_.empty()) {
        std::unique_ptr<Pooled> pooled = std::move(idle_.back());
        idle_.pop_back();
        return Lease(*this, std::move(pooled));
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

void Pool::release(std::unique_ptr<Pooled> pooled) noexcept {
    const bool keep = pooled != nullptr && pooled->connection.is_open();
    if (!keep) pooled.reset();  // close outside the lock
    {
        std::lock_guard<std::mutex> guard(mutex_);
        if (keep)
            idle_.push_back(std::move(pooled));
        else
            --open_;
    }
    available_.notify_one();
}

void Pool::drop_idle() noexcept {
    std::vector<std::unique_ptr<Pooled>> dropped;
    {
        std::lock_guard<std::mutex> guard(mutex_);
        dropped.swap(idle_);
        open_ -= dropped.size();
    }
    available_.notify_all();
    // `dropped` closes its connections here, outside the lock.
}

Pool::Lease::~Lease() {
    if (pool_ != nullptr && pooled_ != nullptr) pool_->release(std::move(pooled_));
}

}  // namespace pg_ratelimit::detail
