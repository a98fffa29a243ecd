// Turning the server's errors about bad input or a missing extension into the client's typed exceptions.
#pragma once

#include <pqxx/except>
#include <string>

namespace pg_ratelimit::detail {

// Throws RateLimitExceeded (RL001), InvalidArgument (SQLSTATE class 22), UnknownLimit (42704) or ExtensionMissing
// (42883, 42P01, 3F000) for such an error; returns for any other, which the caller then rethrows unchanged.
void throw_if_typed(const pqxx::sql_error &error);

// Returns run(); a pqxx::sql_error it throws becomes the typed exception throw_if_typed picks, or
// propagates unchanged.
template <typename Run>
auto with_typed_errors(Run &&run) -> decltype(run()) {
    try {
        return run();
    } catch (const pqxx::sql_error &error) {
        throw_if_typed(error);
        throw;
    }
}

// Throws InvalidArgument (22021) if value contains a NUL byte; `what` names it in the message.
void require_no_nul(const std::string &value, const char *what);

}  // namespace pg_ratelimit::detail
