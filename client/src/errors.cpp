#include "pg_ratelimit/errors.hpp"

#include <utility>

#include "exceeded_detail.hpp"
#include "pqxx_compat.hpp"
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

// The advice ExtensionMissing adds to the server's error.
std::string extension_hint(const std::string &sqlstate) {
    const std::string find_schema =
        "(SELECT extnamespace::regnamespace FROM pg_extension WHERE extname = 'pg_ratelimit' shows it)";
    if (sqlstate == "3F000")
        return "Options::schema names a schema that does not exist in this database: set it to the schema "
               "pg_ratelimit was created in " +
               find_schema + ", or leave it empty to find the extension through the search_path.";
    std::string text =
        "pg_ratelimit is not installed in this database, or not where the client looks for it: run "
        "CREATE EXTENSION pg_ratelimit in this database, or set Options::schema to the schema it was "
        "created in " +
        find_schema + " if that schema is not on the connection's search_path.";
    if (sqlstate != "42883") return text;
    // A function of a later version than the one installed (rate_limit_reserve came with 0.2.0).
    return text +
           " If it is installed there, it may be older than this call needs (Limiter::wait and "
           "reserve_within need 0.2.0): run ALTER EXTENSION pg_ratelimit UPDATE.";
}

// The server's text ends with a newline; the hint follows as a line of its own.
std::string with_hint(std::string text, const std::string &hint) {
    if (!text.empty() && text.back() != '\n') text += '\n';
    return text + "HINT (pg_ratelimit):  " + hint + "\n";
}

}  // namespace

Error::Error(const std::string &server_text, const std::string &query, const std::string &sqlstate)
    : pqxx::sql_error(server_text, query, sqlstate.c_str()), message_(primary_message(server_text)) {}

ExtensionMissing::ExtensionMissing(const std::string &server_text, const std::string &query,
                                   const std::string &sqlstate)
    : Error(with_hint(server_text, extension_hint(sqlstate)), query, sqlstate), hint_(extension_hint(sqlstate)) {}

RateLimitExceeded::RateLimitExceeded(const std::string &server_text, const std::string &query,
                                     const std::string &sqlstate)
    : Error(server_text, query, sqlstate) {
    if (const auto detail = detail::parse_exceeded_detail(server_text)) {
        limit_ = detail->limit;
        key_ = detail->key;
        retry_after_ = detail->retry_after;
    }
}

InDoubt::InDoubt(std::string call, std::vector<LimitRequest> requests, const std::string &what)
    : pqxx::in_doubt_error(what), call_(std::move(call)), requests_(std::move(requests)) {}

namespace detail {

void throw_if_typed(const pqxx::sql_error &error) {
    const std::string state = compat::sqlstate(error);
    const std::string query = compat::query(error);
    const std::string text = compat::server_text(error);
    // rate_limit_enforce's denial (a class of its own: see the server's rate_limit_exceeded.hpp).
    if (state == "RL001") throw RateLimitExceeded(text, query, state);
    if (state == "42704") throw UnknownLimit(text, query, state);
    if (state == "42809") throw WrongLimitKind(text, query, state);
    // Our statements name nothing but the extension's own functions and table (and built-ins), so an
    // undefined function or table, or an unknown schema (Options::schema), means the extension is not
    // where the client looks.
    if (state == "42883" || state == "42P01" || state == "3F000") throw ExtensionMissing(text, query, state);
    // Class 22, data exception: the server's 22004 (null), 22023 (bad value), 22001 (too long).
    if (state.size() == 5 && state.compare(0, 2, "22") == 0) throw InvalidArgument(text, query, state);
}

void require_no_nul(const std::string &value, const char *what) {
    // libpq sends parameters as C strings: a NUL would silently cut the key short and merge it with
    // another key. PostgreSQL's text cannot hold NUL either; 22021 is the SQLSTATE it uses for that.
    if (value.find('\0') != std::string::npos)
        throw InvalidArgument(std::string("ERROR:  ") + what + " must not contain a NUL byte\n", "", "22021");
}

}  // namespace detail
}  // namespace pg_ratelimit
