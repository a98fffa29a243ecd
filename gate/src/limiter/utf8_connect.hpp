// Connections whose text is UTF-8 end to end, whatever conninfo, PGCLIENTENCODING or the server's settings say.
//
// The gate sends keys as the request's UTF-8 bytes (it refuses others). Under another client_encoding the
// server would convert those bytes into other characters: another key than the one SQL callers and the C++
// client name, and another partition's hash. libpq's params form expands conninfo as dbname, and the
// client_encoding after it overrides what conninfo set.
//
// The database's encoding must keep those bytes too: UTF8, or SQL_ASCII (stored as sent). In any other (a
// LATIN1 database) a character it lacks fails the statement (22P05), and in a batch that failure would take
// the other requests with it; and PL/Proxy would hash the converted bytes, not the ones the client hashes.
#pragma once

#include <libpq-fe.h>

#include <optional>
#include <string>

namespace gate::limiter {

enum class Connect { blocking, nonblocking };

inline PGconn *connect_utf8(const std::string &conninfo, Connect how) {
    // Only blanks: the environment's settings, as PQconnectdb takes them (as dbname they would name a database).
    const bool blank = conninfo.find_first_not_of(" \t\n\r\f\v") == std::string::npos;
    const char *const keywords[] = {"dbname", "client_encoding", nullptr};
    const char *const values[] = {blank ? "" : conninfo.c_str(), "UTF8", nullptr};
    return how == Connect::nonblocking ? PQconnectStartParams(keywords, values, 1)
                                       : PQconnectdbParams(keywords, values, 1);
}

// Why a connected database cannot hold the gate's keys as sent, or nothing when it can.
inline std::optional<std::string> unsuitable_encoding(PGconn *conn) {
    const char *encoding = PQparameterStatus(conn, "server_encoding");
    const std::string name = encoding != nullptr ? encoding : "";
    if (name == "UTF8" || name == "SQL_ASCII") return std::nullopt;
    return "the database's encoding is " + (name.empty() ? std::string("unknown") : name) +
           ": pg_ratelimit_gate needs a UTF8 (or SQL_ASCII) database, which keeps its UTF-8 keys as sent";
}

}  // namespace gate::limiter
