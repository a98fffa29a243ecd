// Typed errors of the pg_ratelimit client.
//
// Bad input is rejected by the server with a SQLSTATE; the client turns those into the types below so
// callers can branch on the type (or on sqlstate()), never on message text. Every other failure
// propagates unchanged as the libpqxx exception it is (pqxx::broken_connection, pqxx::in_doubt_error,
// pqxx::serialization_failure once retries are exhausted, ...).
#pragma once

#include <chrono>
#include <pqxx/except>
#include <stdexcept>
#include <string>

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

// A Limiter call found no free pooled connection within Options::acquire_timeout. Nothing was sent to
// the server.
class PoolTimeout : public std::runtime_error {
  public:
    using std::runtime_error::runtime_error;
};

}  // namespace pg_ratelimit
