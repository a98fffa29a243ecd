// The SQL the gate sends: prepared on every connection, schema-qualified (never resolved through the
// search_path, which a role's settings could point elsewhere).
#pragma once

#include <libpq-fe.h>

#include <string>
#include <vector>

#include "limiter/decision.hpp"

namespace gate::limiter {

struct PreparedStatement {
    const char *name;
    std::string sql;
    std::vector<Oid> types;
};

// "schema" quoted as an identifier.
std::string quote_identifier(const std::string &name);

// rate_limit_request_all($1 keys, $2 limits): row 0 the call, rows 1..n the triples.
extern const char *const REQUEST_ALL;
// rate_limit_reserve for each (key, limit, max_wait) in one statement, rows in the order given.
extern const char *const RESERVE_ALL;
// rate_limit_refund of one unit for each (key, limit).
extern const char *const REFUND_ALL;

std::vector<PreparedStatement> prepared_statements(const std::string &schema);

// Defines (or redefines, when its numbers differ) a limit: $1 name, $2 rate, $3 period ("N microseconds"),
// $4 algorithm, $5 capacity, $6 max_reserved, $7 storage. Leaves a limit whose numbers already match
// untouched, so that gates starting together do not redefine it again and again (a redefinition makes
// concurrent table calls fail with 40001 at commit), and keeps what an operator set with SQL beyond the
// file's numbers (shadow, jitter). Text parameters.
std::string define_sql(const std::string &schema);

// Rows of request_all (row 0 first) or reserve_all, binary: the decisions; false if the shape is wrong.
bool read_request_all(const PGresult *result, std::size_t triples, CallOutcome &out);
bool read_reserve_all(const PGresult *result, std::size_t triples, CallOutcome &out);

}  // namespace gate::limiter
