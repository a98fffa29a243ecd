#include "pg_ratelimit/errors.hpp"

#include "translate.hpp"

namespace pg_ratelimit {
namespace {

// The server's text is "ERROR:  primary\nDETAIL:  ...\nHINT:  ...\n"; keep the primary line. (Display
// only: nothing branches on it. A localized severity word is simply left in place.)
std::string primary_message(const std::string &text) {
    std::string line = text.substr(0, text.find('\n'));
    const std::string prefix = "ERROR:  ";
    if (line.compare(0, prefix.size(), prefix) == 0) line.erase(0, prefix.size());
    return line;
}

}  // namespace

Error::Error(const std::string &server_text, const std::string &query, const std::string &sqlstate)
    : pqxx::sql_error(server_text, query, sqlstate.c_str()), message_(primary_message(server_text)) {}

namespace detail {

void throw_if_typed(const pqxx::sql_error &error) {
    const std::string &state = error.sqlstate();
    if (state == "42704") throw UnknownLimit(error.what(), error.query(), state);
    // Class 22, data exception: the server's 22004 (null), 22023 (bad value), 22001 (too long).
    if (state.size() == 5 && state.compare(0, 2, "22") == 0) throw InvalidArgument(error.what(), error.query(), state);
}

void require_no_nul(const std::string &value, const char *what) {
    // libpq sends parameters as C strings: a NUL would silently cut the key short and merge it with
    // another key. PostgreSQL's text cannot hold NUL either; 22021 is the SQLSTATE it uses for that.
    if (value.find('\0') != std::string::npos)
        throw InvalidArgument(std::string("ERROR:  ") + what + " must not contain a NUL byte\n", "", "22021");
}

}  // namespace detail
}  // namespace pg_ratelimit
