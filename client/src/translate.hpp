// Turning the server's bad-input errors into the client's typed exceptions.
#pragma once

#include <pqxx/except>
#include <string>

namespace pg_ratelimit::detail {

// Throws InvalidArgument (SQLSTATE class 22) or UnknownLimit (42704) for such an error; returns for
// any other, which the caller then rethrows unchanged.
void throw_if_typed(const pqxx::sql_error &error);

// Throws InvalidArgument (22021) if value contains a NUL byte; `what` names it in the message.
void require_no_nul(const std::string &value, const char *what);

}  // namespace pg_ratelimit::detail
