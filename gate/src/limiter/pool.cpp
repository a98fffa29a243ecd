#include "limiter/pool.hpp"

#include <boost/asio/post.hpp>

namespace gate::limiter {

namespace asio = boost::asio;
using Clock = std::chrono::steady_clock;

namespace {
// Deadlines are checked this often: a call may outlive its deadline by this much.
constexpr std::chrono::milliseconds SWEEP_EVERY{25};
}  // namespace

Pool::Pool(asio::io_context &io, PoolSettings settings)
    : io_(io), settings_(std::move(settings)), sweeper_(io), random_(std::random_device{}()) {
    for (std::size_t i = 0; i < settings_.size; ++i) {
        Slot slot;
        slot.connection =
            std::make_shared<PgConnection>(io_, settings_.connection, static_cast<ConnectionEvents &>(*this));
        slot.reconnect_timer = std::make_unique<asio::steady_timer>(io_);
        slots_.push_back(std::move(slot));
    }
}

Pool::~Pool() {
    for (auto &slot : slots_) {
        if (slot.was_ready && settings_.ready_gauge != nullptr) settings_.ready_gauge->fetch_sub(1);
    }
}

void Pool::start() {
    for (auto &slot : slots_) slot.connection->connect();
    sweep();
}

bool Pool::any_ready() const {
    for (const auto &slot : slots_) {
        if (slot.connection->state() == PgConnection::State::ready) return true;
    }
    return false;
}

std::size_t Pool::ready_count() const {
    std::size_t n = 0;
    for (const auto &slot : slots_) n += slot.connection->state() == PgConnection::State::ready ? 1 : 0;
    return n;
}

bool Pool::any_connecting() const {
    for (const auto &slot : slots_) {
        const auto state = slot.connection->state();
        if (state == PgConnection::State::connecting || state == PgConnection::State::preparing) return true;
    }
    return false;
}

Pool::Slot &Pool::slot_of(PgConnection &connection) {
    for (auto &slot : slots_) {
        if (slot.connection.get() == &connection) return slot;
    }
    return slots_.front();  // never: every connection is a slot's
}

void Pool::fail(std::unique_ptr<DbCall> call, DbFailure failure, const std::string &why) {
    // Never inside submit(): the caller's callback must not run before submit() returns.
    asio::post(io_, [call = std::shared_ptr<DbCall>(std::move(call)), failure, why] {
        DbOutcome outcome;
        outcome.failure = failure;
        outcome.message = why;
        if (call->done) call->done(std::move(outcome));
    });
}

void Pool::submit(std::unique_ptr<DbCall> call) {
    // Nothing up and nothing on its way up: answer now (failure_mode) rather than after the timeout.
    if (!any_ready() && !any_connecting()) {
        fail(std::move(call), DbFailure::not_sent, "no database connection");
        return;
    }
    queue_.push_back(std::move(call));
    dispatch();
}

void Pool::dispatch() {
    while (!queue_.empty()) {
        PgConnection *best = nullptr;
        for (auto &slot : slots_) {
            PgConnection *c = slot.connection.get();
            if (c->has_capacity() && (best == nullptr || c->load() < best->load())) best = c;
        }
        if (best == nullptr) return;
        auto call = std::move(queue_.front());
        queue_.pop_front();
        best->send(std::move(call));
    }
}

void Pool::on_ready(PgConnection &connection) {
    Slot &slot = slot_of(connection);
    if (!slot.was_ready && settings_.ready_gauge != nullptr) settings_.ready_gauge->fetch_add(1);
    slot.was_ready = true;
    if (slot.failures > 0 && settings_.log) settings_.log("database connection ready again");
    slot.failures = 0;
    dispatch();
}

void Pool::on_capacity(PgConnection &) { dispatch(); }

void Pool::on_broken(PgConnection &connection, const std::string &why) {
    Slot &slot = slot_of(connection);
    if (slot.was_ready && settings_.ready_gauge != nullptr) settings_.ready_gauge->fetch_sub(1);
    slot.was_ready = false;
    // Log the first failure of a run of them, not every attempt of a long outage.
    if (slot.failures == 0 && settings_.log) settings_.log("database connection lost or refused: " + why);
    const int exponent = std::min(slot.failures, 10);
    ++slot.failures;
    const auto ceiling = std::min<std::int64_t>(settings_.reconnect_max.count(),
                                                settings_.reconnect_min.count() * (std::int64_t{1} << exponent));
    // Full jitter over the upper half: gates that lost the server together do not knock on it together.
    std::uniform_int_distribution<std::int64_t> pick(ceiling / 2, ceiling);
    slot.reconnect_timer->expires_after(std::chrono::milliseconds(pick(random_)));
    slot.reconnect_timer->async_wait([connection = slot.connection](boost::system::error_code ec) {
        if (!ec) connection->connect();
    });
    // Calls queued here may have no connection left to wait for.
    if (!any_ready() && !any_connecting()) {
        while (!queue_.empty()) {
            fail(std::move(queue_.front()), DbFailure::not_sent, "no database connection");
            queue_.pop_front();
        }
    }
}

void Pool::sweep() {
    const auto now = Clock::now();
    // Calls still queued past their deadline: nothing was sent.
    for (auto it = queue_.begin(); it != queue_.end();) {
        if ((*it)->deadline <= now) {
            fail(std::move(*it), DbFailure::timed_out, "no connection became free in time");
            it = queue_.erase(it);
        } else {
            ++it;
        }
    }
    // A call in flight past its deadline: the server is stuck or unreachable. The connection is closed (its
    // calls' fate is unknown: failure_mode) and made again.
    for (auto &slot : slots_) {
        if (slot.connection->oldest_deadline() <= now) {
            slot.connection->close(DbFailure::timed_out, "a statement got no answer in time");
        }
    }
    sweeper_.expires_after(SWEEP_EVERY);
    sweeper_.async_wait([this](boost::system::error_code ec) {
        if (!ec) sweep();
    });
}

}  // namespace gate::limiter
