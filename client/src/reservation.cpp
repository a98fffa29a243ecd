#include "pg_ratelimit/reservation.hpp"

#include <pqxx/except>
#include <stdexcept>
#include <utility>

#include "limiter_core.hpp"
#include "pg_ratelimit/errors.hpp"

namespace pg_ratelimit {

Reservation::Reservation(std::shared_ptr<detail::LimiterCore> core, std::string key, double cost, Decision decision,
                         bool in_transaction)
    : core_(std::move(core)),
      key_(std::move(key)),
      cost_(cost),
      decision_(std::move(decision)),
      in_transaction_(in_transaction) {}

// A moved-from reservation has nothing left to cancel.
Reservation::Reservation(Reservation &&other) noexcept
    : core_(std::move(other.core_)),
      key_(std::move(other.key_)),
      cost_(other.cost_),
      decision_(std::move(other.decision_)),
      in_transaction_(other.in_transaction_),
      cancelled_(std::exchange(other.cancelled_, true)),
      settled_(other.settled_) {
    other.decision_.allowed = false;
}

Reservation &Reservation::operator=(Reservation &&other) noexcept {
    if (this != &other) {
        core_ = std::move(other.core_);
        key_ = std::move(other.key_);
        cost_ = other.cost_;
        decision_ = std::move(other.decision_);
        in_transaction_ = other.in_transaction_;
        cancelled_ = std::exchange(other.cancelled_, true);
        settled_ = other.settled_;
        other.decision_.allowed = false;
    }
    return *this;
}

Reservation::~Reservation() = default;

bool Reservation::cancel() {
    if (core_ == nullptr || !ok() || cancelled_ || settled_) return false;
    if (holds_nothing()) return false;
    if (in_transaction_)
        throw std::logic_error(
            "pg_ratelimit: a reservation made inside a transaction must be cancelled inside one: use cancel(tx)");
    try {
        (void)core_->pooled(detail::Call::refund, detail::CallArgs{key_, decision_.limit, cost_});
    } catch (const pqxx::in_doubt_error &) {
        cancelled_ = true;  // the refund may have committed: never refund twice
        throw;
    }
    cancelled_ = true;
    return true;
}

bool Reservation::cancel(pqxx::transaction_base &tx) {
    if (core_ == nullptr || !ok() || cancelled_ || settled_) return false;
    if (holds_nothing()) return false;
    (void)core_->in_transaction(tx, detail::Call::refund, detail::CallArgs{key_, decision_.limit, cost_});
    cancelled_ = true;
    return true;
}

namespace {

// A shadow-denied reservation took nothing, and the work a real limit would have turned away is not
// recorded either: its settle only reads the key's decision (0 reserved, 0 actual). The actual cost is
// still checked here, as the server checks it for any other reservation.
detail::CallArgs settle_args(const Reservation &reservation, const std::string &key, double cost, double actual) {
    if (!reservation.holds_nothing()) return detail::CallArgs{key, reservation.decision().limit, cost, false, actual};
    if (!(actual == 0 || (actual >= 1e-9 && actual <= 1e12)))
        throw InvalidArgument("ERROR:  actual must be 0 or between 1e-09 and 1e+12\n", "", "22023");
    return detail::CallArgs{key, reservation.decision().limit, 0, false, 0};
}

void require_settleable(bool open) {
    if (!open)
        throw std::logic_error(
            "pg_ratelimit: only a granted reservation that was neither cancelled nor settled can be settled");
}

}  // namespace

Decision Reservation::settle(double actual) {
    require_settleable(core_ != nullptr && ok() && !cancelled_ && !settled_);
    if (in_transaction_)
        throw std::logic_error(
            "pg_ratelimit: a reservation made inside a transaction must be settled inside one: use settle(tx, actual)");
    const detail::CallArgs args = settle_args(*this, key_, cost_, actual);
    try {
        Decision decision = core_->pooled(detail::Call::settle, args);
        settled_ = true;
        return decision;
    } catch (const pqxx::in_doubt_error &) {
        settled_ = true;  // the settle may have committed: never apply it twice
        throw;
    }
}

Decision Reservation::settle(pqxx::transaction_base &tx, double actual) {
    require_settleable(core_ != nullptr && ok() && !cancelled_ && !settled_);
    Decision decision = core_->in_transaction(tx, detail::Call::settle, settle_args(*this, key_, cost_, actual));
    settled_ = true;
    return decision;
}

}  // namespace pg_ratelimit
