#include "limiter/pg_connection.hpp"

#include <boost/asio/post.hpp>
#include <cstring>

#include "limiter/utf8_connect.hpp"

namespace gate::limiter {

namespace asio = boost::asio;
using Descriptor = asio::posix::stream_descriptor;

namespace {

std::string trimmed(const char *text) {
    std::string out = text == nullptr ? "" : text;
    while (!out.empty() && (out.back() == '\n' || out.back() == ' ')) out.pop_back();
    return out;
}

// A server going away answers a statement in flight with one of these before it closes the connection
// (57P01 admin_shutdown, 57P02 crash_shutdown, 57P03 cannot_connect_now; class 08, connection exceptions):
// the statement may have run in part, as for any connection lost once it was sent.
bool is_connection_failure(const std::string &sqlstate) {
    return sqlstate.rfind("57P0", 0) == 0 || sqlstate.rfind("08", 0) == 0;
}

}  // namespace

PgConnection::PgConnection(asio::io_context &io, const ConnectionSettings &settings, ConnectionEvents &events)
    : io_(io),
      settings_(settings),
      events_(events),
      max_in_flight_(settings.pipeline ? settings.max_in_flight : 1),
      socket_(io),
      connect_timer_(io) {}

PgConnection::~PgConnection() {
    if (attached_fd_ >= 0) socket_.release();  // libpq owns the descriptor: PQfinish closes it
    if (conn_ != nullptr) PQfinish(conn_);
}

std::chrono::steady_clock::time_point PgConnection::oldest_deadline() const {
    auto oldest = std::chrono::steady_clock::time_point::max();
    for (const auto &entry : in_flight_) oldest = std::min(oldest, entry.call->deadline);
    for (const auto &call : outbox_) oldest = std::min(oldest, call->deadline);
    return oldest;
}

void PgConnection::connect() {
    if (state_ != State::closed) return;
    ++generation_;
    conn_ = connect_utf8(settings_.conninfo, Connect::nonblocking);
    if (conn_ == nullptr || PQstatus(conn_) == CONNECTION_BAD) {
        const std::string why = conn_ == nullptr ? "out of memory" : trimmed(PQerrorMessage(conn_));
        // Reported after connect() returns, so that the pool never sees a connection break inside its own call.
        state_ = State::connecting;
        asio::post(io_, [self = shared_from_this(), why] { self->close(DbFailure::not_sent, why); });
        return;
    }
    state_ = State::connecting;
    connect_timer_.expires_after(settings_.connect_timeout);
    connect_timer_.async_wait([self = shared_from_this(), generation = generation_](boost::system::error_code ec) {
        if (ec || generation != self->generation_ || self->state_ != State::connecting) return;
        self->close(DbFailure::not_sent, "connection attempt timed out");
    });
    // libpq's rule: start as if PQconnectPoll had last answered PGRES_POLLING_WRITING.
    poll_connect(PGRES_POLLING_WRITING);
}

void PgConnection::attach_socket() {
    const int fd = PQsocket(conn_);
    if (fd == attached_fd_) return;
    if (attached_fd_ >= 0) socket_.release();
    attached_fd_ = -1;
    if (fd < 0) return;
    socket_.assign(fd);
    attached_fd_ = fd;
}

void PgConnection::poll_connect(PostgresPollingStatusType status) {
    if (status == PGRES_POLLING_OK) {
        on_connected();
        return;
    }
    if (status == PGRES_POLLING_FAILED) {
        close(DbFailure::not_sent, trimmed(PQerrorMessage(conn_)));
        return;
    }
    attach_socket();  // libpq may open another socket while it tries the next address
    if (attached_fd_ < 0) {
        close(DbFailure::not_sent, "no socket while connecting");
        return;
    }
    const auto wait = status == PGRES_POLLING_READING ? Descriptor::wait_read : Descriptor::wait_write;
    socket_.async_wait(wait, [self = shared_from_this(), generation = generation_](boost::system::error_code ec) {
        if (generation != self->generation_ || self->state_ != State::connecting) return;
        if (ec) {
            self->close(DbFailure::not_sent, "socket error while connecting: " + ec.message());
            return;
        }
        self->poll_connect(PQconnectPoll(self->conn_));
    });
}

void PgConnection::on_connected() {
    connect_timer_.cancel();
    attach_socket();
    if (const auto why = unsuitable_encoding(conn_)) {
        close(DbFailure::not_sent, *why);
        return;
    }
    if (PQsetnonblocking(conn_, 1) != 0 || (settings_.pipeline && PQenterPipelineMode(conn_) != 1)) {
        close(DbFailure::not_sent, "cannot enter non-blocking or pipeline mode: " + trimmed(PQerrorMessage(conn_)));
        return;
    }
    state_ = State::preparing;
    arm_read();
    statements_pending_ = settings_.statements.size();
    for (const auto &statement : settings_.statements) {
        auto call = std::make_unique<DbCall>();
        call->kind = DbCall::Kind::prepare;
        call->statement = statement.name;
        call->prepare_sql = statement.sql;
        call->types = statement.types;
        call->deadline = std::chrono::steady_clock::now() + settings_.connect_timeout;
        const std::uint64_t generation = generation_;
        call->done = [self = shared_from_this(), generation, name = std::string(statement.name)](DbOutcome outcome) {
            if (generation != self->generation_ || self->state_ != State::preparing) return;
            if (outcome.failure != DbFailure::none) {
                self->close(DbFailure::not_sent, "cannot prepare " + name + ": " + outcome.message);
                return;
            }
            if (--self->statements_pending_ == 0) {
                self->state_ = State::ready;
                self->events_.on_ready(*self);
            }
        };
        outbox_.push_back(std::move(call));
    }
    if (statements_pending_ == 0) {
        state_ = State::ready;
        events_.on_ready(*this);
        return;
    }
    pump();
}

void PgConnection::send(std::unique_ptr<DbCall> call) {
    outbox_.push_back(std::move(call));
    pump();
}

void PgConnection::pump() {
    const std::size_t limit = settings_.pipeline ? max_in_flight_ : 1;
    bool sent = false;
    while (!outbox_.empty() && in_flight_.size() < limit && conn_ != nullptr) {
        auto call = std::move(outbox_.front());
        outbox_.pop_front();
        transmit(std::move(call));
        sent = true;
        if (conn_ == nullptr) return;  // closed while sending
    }
    if (sent) flush();
}

void PgConnection::transmit(std::unique_ptr<DbCall> call) {
    std::vector<const char *> values;
    std::vector<int> lengths;
    std::vector<int> formats;
    for (const auto &param : call->params) {
        values.push_back(param.data());
        lengths.push_back(static_cast<int>(param.size()));
        formats.push_back(call->binary_params ? 1 : 0);
    }
    const int n = static_cast<int>(values.size());
    const int result_format = call->binary_result ? 1 : 0;
    int ok = 0;
    switch (call->kind) {
        case DbCall::Kind::prepare:
            ok = PQsendPrepare(conn_, call->statement.c_str(), call->prepare_sql.c_str(),
                               static_cast<int>(call->types.size()), call->types.data());
            break;
        case DbCall::Kind::prepared:
            ok = PQsendQueryPrepared(conn_, call->statement.c_str(), n, values.data(), lengths.data(), formats.data(),
                                     result_format);
            break;
        case DbCall::Kind::sql:
            ok = PQsendQueryParams(conn_, call->statement.c_str(), n, nullptr, values.data(), lengths.data(),
                                   formats.data(), result_format);
            break;
    }
    if (ok == 1 && settings_.pipeline) ok = PQpipelineSync(conn_);
    if (ok != 1) {
        // Nothing reached the server for this call: whoever asked may send it elsewhere.
        outbox_.push_front(std::move(call));
        close(DbFailure::lost_after_send, "cannot send: " + trimmed(PQerrorMessage(conn_)));
        return;
    }
    in_flight_.push_back(InFlight{std::move(call)});
}

void PgConnection::flush() {
    if (conn_ == nullptr) return;
    const int status = PQflush(conn_);
    if (status < 0) {
        close(DbFailure::lost_after_send, "cannot send: " + trimmed(PQerrorMessage(conn_)));
    } else if (status > 0) {
        arm_write();
    }
}

void PgConnection::arm_write() {
    if (write_armed_) return;
    write_armed_ = true;
    socket_.async_wait(Descriptor::wait_write,
                       [self = shared_from_this(), generation = generation_](boost::system::error_code ec) {
                           if (generation != self->generation_) return;
                           self->write_armed_ = false;
                           if (ec) return;
                           self->flush();
                       });
}

void PgConnection::arm_read() {
    if (read_armed_) return;
    read_armed_ = true;
    // Also while idle: a server that terminates the connection is noticed at once, not at the next call.
    socket_.async_wait(Descriptor::wait_read,
                       [self = shared_from_this(), generation = generation_](boost::system::error_code ec) {
                           if (generation != self->generation_) return;
                           self->read_armed_ = false;
                           if (ec) {
                               self->close(DbFailure::lost_after_send, "socket error: " + ec.message());
                               return;
                           }
                           self->on_readable();
                       });
}

void PgConnection::on_readable() {
    if (PQconsumeInput(conn_) != 1) {
        close(DbFailure::lost_after_send, trimmed(PQerrorMessage(conn_)));
        return;
    }
    process_results();
    if (conn_ == nullptr) return;
    if (PQstatus(conn_) == CONNECTION_BAD) {
        close(DbFailure::lost_after_send, trimmed(PQerrorMessage(conn_)));
        return;
    }
    // A non-blocking send that stopped because the socket was full may go on once input was read.
    if (PQisnonblocking(conn_) && !write_armed_) flush();
    arm_read();
}

void PgConnection::process_results() {
    std::vector<std::pair<std::unique_ptr<DbCall>, DbOutcome>> completed;
    while (!in_flight_.empty() && conn_ != nullptr && PQisBusy(conn_) == 0) {
        InFlight &front = in_flight_.front();
        PGresult *raw = PQgetResult(conn_);
        if (raw == nullptr) {
            if (!settings_.pipeline) {
                completed.emplace_back(std::move(front.call), outcome_of(front));
                in_flight_.pop_front();
                continue;
            }
            if (front.results_ended) break;  // the sync point's answer has not arrived yet
            front.results_ended = true;
            continue;
        }
        PgResult result(raw);
        if (PQresultStatus(raw) == PGRES_PIPELINE_SYNC) {
            completed.emplace_back(std::move(front.call), outcome_of(front));
            in_flight_.pop_front();
            continue;
        }
        if (!front.result) front.result = std::move(result);  // a statement has one result; keep the first
    }
    if (!completed.empty()) deliver(std::move(completed));
    if (state_ == State::ready || state_ == State::preparing) pump();
}

DbOutcome PgConnection::outcome_of(InFlight &entry) {
    DbOutcome out;
    if (!entry.result) {
        out.failure = DbFailure::lost_after_send;
        out.message = "no result";
        return out;
    }
    const ExecStatusType status = PQresultStatus(entry.result.get());
    if (status == PGRES_TUPLES_OK || status == PGRES_COMMAND_OK) {
        out.result = std::move(entry.result);
        return out;
    }
    if (status == PGRES_PIPELINE_ABORTED) {
        out.failure = DbFailure::not_sent;  // skipped by the server after another statement's error
        out.message = "pipeline aborted";
        return out;
    }
    const char *sqlstate = PQresultErrorField(entry.result.get(), PG_DIAG_SQLSTATE);
    out.sqlstate = sqlstate == nullptr ? "" : sqlstate;
    out.message = trimmed(PQresultErrorMessage(entry.result.get()));
    out.failure = is_connection_failure(out.sqlstate) || PQstatus(conn_) == CONNECTION_BAD ? DbFailure::lost_after_send
                                                                                           : DbFailure::sql_error;
    return out;
}

void PgConnection::deliver(std::vector<std::pair<std::unique_ptr<DbCall>, DbOutcome>> &&completed) {
    // Outside process_results' loop: a callback may send the next call, on this connection or another, or
    // close this one (the caller checks conn_ afterwards). Held alive meanwhile by `self`.
    const auto self = shared_from_this();
    auto calls = std::move(completed);  // and ended here, as their callbacks' captures
    for (auto &[call, outcome] : calls) {
        if (call->done) call->done(std::move(outcome));
    }
    events_.on_capacity(*this);
}

void PgConnection::close(DbFailure failure, const std::string &why) {
    if (state_ == State::closed) return;
    ++generation_;
    state_ = State::closed;
    read_armed_ = false;
    write_armed_ = false;
    connect_timer_.cancel();
    if (attached_fd_ >= 0) socket_.release();  // cancels the waits; libpq closes the descriptor
    attached_fd_ = -1;
    if (conn_ != nullptr) PQfinish(conn_);
    conn_ = nullptr;
    std::vector<std::pair<std::unique_ptr<DbCall>, DbOutcome>> failed;
    for (auto &entry : in_flight_) {
        DbOutcome outcome;
        outcome.failure = failure == DbFailure::not_sent ? DbFailure::lost_after_send : failure;
        outcome.message = why;
        failed.emplace_back(std::move(entry.call), std::move(outcome));
    }
    for (auto &call : outbox_) {
        DbOutcome outcome;
        outcome.failure = DbFailure::not_sent;
        outcome.message = why;
        failed.emplace_back(std::move(call), std::move(outcome));
    }
    in_flight_.clear();
    outbox_.clear();
    statements_pending_ = 0;
    asio::post(io_, [self = shared_from_this(), why, failed = std::make_shared<decltype(failed)>(std::move(failed))] {
        for (auto &[call, outcome] : *failed) {
            if (call->done) call->done(std::move(outcome));
        }
        self->events_.on_broken(*self, why);
    });
}

}  // namespace gate::limiter
