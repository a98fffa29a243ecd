// Limiter: argument plumbing onto LimiterCore. Pooled overloads retry; in-transaction ones never do.
#include "pg_ratelimit/limiter.hpp"

#include "limiter_core.hpp"

namespace pg_ratelimit {

using detail::Call;
using detail::CallArgs;

Limiter::Limiter(const std::string &conninfo, Options options)
    : core_(std::make_shared<detail::LimiterCore>(conninfo, std::move(options))) {}

Limiter::~Limiter() = default;
Limiter::Limiter(Limiter &&) noexcept = default;
Limiter &Limiter::operator=(Limiter &&) noexcept = default;

Decision Limiter::request(const std::string &key, const std::string &limit, double cost) {
    return core_->pooled(Call::request, CallArgs{key, limit, cost});
}

Decision Limiter::request(pqxx::transaction_base &tx, const std::string &key, const std::string &limit, double cost) {
    return core_->in_transaction(tx, Call::request, CallArgs{key, limit, cost});
}

void Limiter::enforce(const std::string &key, const std::string &limit, double cost) {
    (void)core_->pooled(Call::enforce, CallArgs{key, limit, cost});
}

void Limiter::enforce(pqxx::transaction_base &tx, const std::string &key, const std::string &limit, double cost) {
    (void)core_->in_transaction(tx, Call::enforce, CallArgs{key, limit, cost});
}

Decision Limiter::check(const std::string &key, const std::string &limit, double cost) {
    return core_->pooled(Call::check, CallArgs{key, limit, cost});
}

Decision Limiter::check(pqxx::transaction_base &tx, const std::string &key, const std::string &limit, double cost) {
    return core_->in_transaction(tx, Call::check, CallArgs{key, limit, cost});
}

Decision Limiter::refund(const std::string &key, const std::string &limit, double cost) {
    return core_->pooled(Call::refund, CallArgs{key, limit, cost});
}

Decision Limiter::refund(pqxx::transaction_base &tx, const std::string &key, const std::string &limit, double cost) {
    return core_->in_transaction(tx, Call::refund, CallArgs{key, limit, cost});
}

void Limiter::reset(const std::string &key, const std::string &limit) {
    (void)core_->pooled(Call::reset, CallArgs{key, limit});
}

void Limiter::reset(pqxx::transaction_base &tx, const std::string &key, const std::string &limit) {
    (void)core_->in_transaction(tx, Call::reset, CallArgs{key, limit});
}

Reservation Limiter::reserve(const std::string &key, const std::string &limit, double cost, ReserveMode mode) {
    Decision decision = core_->pooled(Call::request, CallArgs{key, limit, cost, mode == ReserveMode::scheduled});
    return Reservation(core_, key, cost, std::move(decision), false);
}

Reservation Limiter::reserve(pqxx::transaction_base &tx, const std::string &key, const std::string &limit, double cost,
                             ReserveMode mode) {
    Decision decision =
        core_->in_transaction(tx, Call::request, CallArgs{key, limit, cost, mode == ReserveMode::scheduled});
    return Reservation(core_, key, cost, std::move(decision), true);
}

RetryStats Limiter::stats() const { return core_->stats(); }

std::size_t Limiter::partitions() const { return core_->partitions(); }

std::size_t Limiter::partition_of(const std::string &key) const { return core_->partition_of(key); }

}  // namespace pg_ratelimit
