// One statement for the pool to run, and what became of it.
#pragma once

#include <libpq-fe.h>

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace gate::limiter {

struct PgResultDeleter {
    void operator()(PGresult *result) const { PQclear(result); }
};
using PgResult = std::unique_ptr<PGresult, PgResultDeleter>;

enum class DbFailure {
    none,
    sql_error,        // the server answered with an error (sqlstate says which)
    not_sent,         // no connection took it (none up, or it broke before the statement was sent)
    lost_after_send,  // the connection broke once the statement was sent: it may have run
    timed_out,        // no answer within the deadline (the connection is reset: it may have run)
};

struct DbOutcome {
    DbFailure failure = DbFailure::none;
    std::string sqlstate{};
    std::string message{};
    PgResult result{};  // the statement's result when failure is none
};

struct DbCall {
    enum class Kind { prepared, sql, prepare } kind = Kind::prepared;
    std::string statement{};    // prepared statement name (prepared, prepare) or SQL text (sql)
    std::string prepare_sql{};  // prepare: the statement's text
    std::vector<Oid> types{};   // prepare: its parameter types
    std::vector<std::string> params{};
    bool binary_params = true;
    bool binary_result = true;
    std::chrono::steady_clock::time_point deadline{};
    std::function<void(DbOutcome)> done{};
};

}  // namespace gate::limiter
