// Typed errors of the pg_ratelimit client.
//
// Bad input is rejected by the server with a SQLSTATE; the client turns those into the types below so
// callers can branch on the type (or on sqlstate()), never on message text. Every other failure
// propagates unchanged as the libpqxx exception it is (pqxx::broken_connection, pqxx::in_doubt_error,
// pqxx::serialization_failure once retries are exhausted, ...).
#pragma once

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

// A Limiter call found no free pooled connection within Options::acquire_timeout. Nothing was sent to
// the server.
class PoolTimeout : public std::runtime_error {
  public:
    using std::runtime_error::runtime_error;
};

}  // namespace pg_ratelimit
