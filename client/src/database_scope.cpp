#include "database_scope.hpp"

namespace pg_ratelimit::detail {

std::string database_scope(compat::Connection &connection) {
    const auto part = [](const char *text) { return std::string(text != nullptr ? text : ""); };
    std::string scope = part(connection.hostname());
    scope.push_back('\0');
    scope += compat::port(connection);
    scope.push_back('\0');
    scope += part(connection.dbname());
    return scope;
}

}  // namespace pg_ratelimit::detail
