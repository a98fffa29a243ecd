// Typed errors of the pg_ratelimit client.
//
// Bad input is rejected by the server with a SQLSTATE; the client turns those into the types below so
// callers can branch on the type (or on sqlstate()), never on message text. Every other failure
// propagates unchanged as the libpqxx exception it is (pqxx::broken_connection, pqxx::serialization_failure
// once retries are exhausted, ...), except a pooled call whose effect is in doubt: InDoubt (a
// pqxx::in_doubt_error).
//
// The libpqxx base classes show through, and they differ between libpqxx versions:
// - sqlstate() and query() (pqxx::sql_error's) return const std::string & with libpqxx 6.4 and 7, and
//   std::string_view with libpqxx 8 (std::string(e.sqlstate()) or comparing with == works on all three);
// - with libpqxx 6.4 and 7 every pqxx::failure, and so Error and InDoubt, is a std::runtime_error; with
//   libpqxx 8 pqxx::failure derives from std::exception directly (catch std::exception, or pqxx::failure,
//   to catch them on all three). libpqxx 8 also gives them location() and trace() (where the client made
//   the exception). PoolTimeout is a std::runtime_error on all three.
#pragma once

#include <chrono>
#include <pqxx/except>
#include <stdexcept>
#include <string>
#include <vector>

#include "pg_ratelimit/all_decision.hpp"

namespace pg_ratelimit {

// Base of the errors the server reports for a call. Derives from pqxx::sql_error, so code that already
// catches pqxx::sql_error keeps working; what() is the server's full error text (with DETAIL and HINT
// lines), sqlstate() its SQLSTATE, query() the statement that failed.
class Error : public pqxx::sql_error {
  public:
    Error(const std::string &server_text, const std::string &query, const std::string &sqlstate);

    // The primary message alone: the first line of what(), without its severity prefix ("ERROR:  ").
    [[nodiscard]] const std::string &message() const noexcept { return message_; }

  private:
    std::string message_;
};

// Invalid arguments (SQLSTATE class 22): 22004 a null argument, 22023 a bad value (cost not positive
// and finite, cost above the limit's capacity, ...), 22001 a key or limit name too long (keys: 1024
// bytes), 22021 a key or name containing a NUL byte (checked by the client, since libpq would silently
// cut the string there).
class InvalidArgument : public Error {
  public:
    using Error::Error;
};

// SQLSTATE 42704: the named limit does not exist (define it with rate_limit_define()).
class UnknownLimit : public Error {
  public:
    using Error::Error;
};

// SQLSTATE 42809: the named limit is of the other kind: a concurrency limit given to a rate call (request,
// check, ...), or a rate limit given to Limiter::acquire().
class WrongLimitKind : public Error {
  public:
    using Error::Error;
};

// pg_ratelimit's functions or tables were not found where the client looked for them: the database has
// no CREATE EXTENSION pg_ratelimit, or the extension lives in a schema that is neither Options::schema nor
// on the connection's search_path, or it is older than the call (Limiter::wait and reserve_within need
// rate_limit_reserve, from 0.2.0 on: ALTER EXTENSION pg_ratelimit UPDATE). sqlstate() is the server's:
// 42883 (undefined_function: a rate_limit_* function), 42P01 (undefined_table: rate_limit_config) or 3F000
// (invalid_schema_name: Options::schema names no schema of this database). Thrown by the Limiter's
// constructor, which prepares its statements on its first connection, and by any call (pooled, or in the
// caller's transaction, which may be on another database). what() is the server's text followed by a line
// "HINT (pg_ratelimit): " + hint(); message() is the server's primary message, as for every Error.
class ExtensionMissing : public Error {
  public:
    ExtensionMissing(const std::string &server_text, const std::string &query, const std::string &sqlstate);

    // What to do about it: CREATE EXTENSION pg_ratelimit, Options::schema, or ALTER EXTENSION ... UPDATE.
    [[nodiscard]] const std::string &hint() const noexcept { return hint_; }

  private:
    std::string hint_;
};

// SQLSTATE RL001: rate_limit_enforce (Limiter::enforce) was denied. The server's transaction is aborted,
// so whatever else it consumed rolls back with it (memory limits excepted). limit(), key() and
// retry_after() come from the error's DETAIL, a JSON object (exact to the microsecond; the key whole, even
// where the message clips it): come back after retry_after(). Every retry_after the server reports is read
// exactly, up to its longest, 3162240000000 s (about 100,000 years: a lifetime quota that will never
// refill); a longer one, which no server sends, saturates at microseconds::max(). If the DETAIL cannot be
// read (never expected), limit() and key() are empty and retry_after() is zero.
class RateLimitExceeded : public Error {
  public:
    RateLimitExceeded(const std::string &server_text, const std::string &query, const std::string &sqlstate);

    [[nodiscard]] const std::string &limit() const noexcept { return limit_; }
    [[nodiscard]] const std::string &key() const noexcept { return key_; }
    [[nodiscard]] std::chrono::microseconds retry_after() const noexcept { return retry_after_; }

  private:
    std::string limit_;
    std::string key_;
    std::chrono::microseconds retry_after_{0};
};

// A pooled call (no transaction argument) lost its connection at a moment when its effect may already
// have happened, so the Limiter did NOT run it again: running it again could apply it twice (take the units
// twice, give them back twice). Whether it took effect is unknown; nothing the client can read tells it.
// Thrown when:
// - the connection broke during COMMIT (whatever the limit's storage);
// - the connection broke after the call's statement was sent and before COMMIT, and one of its limits does
//   not keep its state in a table: storage => 'memory', whose decisions take effect when the statement runs,
//   whatever becomes of the transaction (or a limit whose storage the Limiter could not confirm afterwards:
//   dropped meanwhile, or the server unreachable until the retries ran out).
// Every other lost connection is retried as before, because nothing can have been applied: one broken before
// the statement was sent (a dead pooled connection found by BEGIN), or after it when every limit of the call
// is durable or unlogged (its transaction never committed, so the server rolled it back; the Limiter reads
// the limits' storage from rate_limit_config on a new connection before running the call again).
//
// Derives from pqxx::in_doubt_error, libpqxx's own "may or may not have committed": code that catches that
// catches this too, and nothing retries it (run_transaction, a Reservation's cancel() and settle(), which
// count as done after it). What to do: treat the call as possibly applied (for a request: as consumed); if
// the difference matters, look at the key (Limiter::check) rather than repeating the call. Calls inside the
// caller's transaction never throw it (they never retry; see run_transaction for memory limits there).
class InDoubt : public pqxx::in_doubt_error {
  public:
    InDoubt(std::string call, std::vector<LimitRequest> requests, const std::string &what);

    // The server function the call ran: "rate_limit_request" (request, reserve), "rate_limit_reserve"
    // (wait, reserve_within), "rate_limit_refund" (refund, Reservation::cancel), "rate_limit_settle",
    // "rate_limit_enforce", "rate_limit_reset", "rate_limit_request_many" or "rate_limit_request_all".
    [[nodiscard]] const std::string &call() const noexcept { return call_; }
    // What it asked for: one (key, limit, cost) for a single-key call, one per key for request_many, the
    // requests of request_all. cost is the call's cost argument (settle: the actual cost; reset: 0).
    [[nodiscard]] const std::vector<LimitRequest> &requests() const noexcept { return requests_; }

  private:
    std::string call_;
    std::vector<LimitRequest> requests_;
};

// A Limiter call found no free pooled connection within Options::acquire_timeout. Nothing was sent to
// the server.
class PoolTimeout : public std::runtime_error {
  public:
    using std::runtime_error::runtime_error;
};

// Options::partitions: a call that runs on one server got keys of several partitions (request_all, an
// in-transaction call), or an in-transaction call's connection is not to its key's partition
// (Limiter::partition_of). Thrown before anything is sent: a programming error, not a server's answer.
class WrongPartition : public std::invalid_argument {
  public:
    using std::invalid_argument::invalid_argument;
};

}  // namespace pg_ratelimit
