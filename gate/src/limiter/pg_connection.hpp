// One PostgreSQL connection driven by libpq's asynchronous API on an io_context: the socket is watched by
// Asio (posix::stream_descriptor::async_wait), libpq does the protocol (PQconnectPoll, PQsendQueryPrepared,
// PQconsumeInput, PQisBusy, PQgetResult), and no call ever blocks the thread. In pipeline mode (libpq 14+)
// many statements are in flight at once, each followed by its own sync point: each is its own implicit
// transaction, and an error in one leaves the others alone.
#pragma once

#include <libpq-fe.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <boost/asio/steady_timer.hpp>
#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <vector>

#include "limiter/db_call.hpp"
#include "limiter/statements.hpp"

namespace gate::limiter {

class PgConnection;

// What a connection tells its pool.
class ConnectionEvents {
  public:
    virtual ~ConnectionEvents() = default;
    virtual void on_ready(PgConnection &connection) = 0;                           // connected, statements prepared
    virtual void on_broken(PgConnection &connection, const std::string &why) = 0;  // closed; calls failed
    virtual void on_capacity(PgConnection &connection) = 0;                        // a call completed
};

struct ConnectionSettings {
    std::string conninfo{};
    bool pipeline = true;
    std::size_t max_in_flight = 64;  // pipeline mode; 1 otherwise
    std::chrono::milliseconds connect_timeout{5000};
    std::vector<PreparedStatement> statements{};
};

class PgConnection : public std::enable_shared_from_this<PgConnection> {
  public:
    enum class State { closed, connecting, preparing, ready };

    PgConnection(boost::asio::io_context &io, const ConnectionSettings &settings, ConnectionEvents &events);
    ~PgConnection();
    PgConnection(const PgConnection &) = delete;
    PgConnection &operator=(const PgConnection &) = delete;

    void connect();
    // Only when has_capacity(). The call's done() runs on this io_context, never inside send().
    void send(std::unique_ptr<DbCall> call);
    // Closes the connection: calls in flight fail with `failure`, calls not yet sent with not_sent.
    void close(DbFailure failure, const std::string &why);

    [[nodiscard]] State state() const { return state_; }
    [[nodiscard]] bool has_capacity() const {
        return state_ == State::ready && in_flight_.size() + outbox_.size() < max_in_flight_;
    }
    [[nodiscard]] std::size_t load() const { return in_flight_.size() + outbox_.size(); }
    // The earliest deadline of a call in flight (time_point::max() when none).
    [[nodiscard]] std::chrono::steady_clock::time_point oldest_deadline() const;

  private:
    struct InFlight {
        std::unique_ptr<DbCall> call;
        PgResult result{};
        bool results_ended = false;  // pipeline mode: PQgetResult gave NULL, the sync point comes next
    };

    void poll_connect(PostgresPollingStatusType status);
    void on_connected();
    void attach_socket();
    void transmit(std::unique_ptr<DbCall> call);
    void pump();
    void flush();
    void arm_read();
    void arm_write();
    void on_readable();
    void process_results();
    DbOutcome outcome_of(InFlight &entry);
    void deliver(std::vector<std::pair<std::unique_ptr<DbCall>, DbOutcome>> &&completed);

    boost::asio::io_context &io_;
    const ConnectionSettings &settings_;
    ConnectionEvents &events_;
    std::size_t max_in_flight_;
    PGconn *conn_ = nullptr;
    boost::asio::posix::stream_descriptor socket_;
    int attached_fd_ = -1;
    boost::asio::steady_timer connect_timer_;
    State state_ = State::closed;
    std::uint64_t generation_ = 0;  // handlers of an earlier connection see another number and return
    bool read_armed_ = false;
    bool write_armed_ = false;
    std::size_t statements_pending_ = 0;
    std::deque<InFlight> in_flight_;
    std::deque<std::unique_ptr<DbCall>> outbox_;
};

}  // namespace gate::limiter
