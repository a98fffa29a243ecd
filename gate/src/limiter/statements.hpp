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
// rate_limit_request($1 key, $2 limit) as a scalar: a request with one limit. All or nothing is then
// trivially what one call does, and the scalar form costs the server two thirds of request_all's work
// (pgbench, memory limit, 8 clients: 66,400 calls/s against 43,100).
extern const char *const REQUEST_ONE;
// Several requests' decisions in one statement (limiter/batcher.hpp): the scalar rate_limit_request of each
// ($1 keys, $2 limits; rows: ordinal, decision record), and rate_limit_request_all of each request
// ($1 request numbers, $2 keys, $3 limits, a request's triples consecutive; rows: request number, position,
// decision). Each call decides alone, as it would in a statement of its own; they share one transaction.
extern const char *const BATCH_ONE;
extern const char *const BATCH_ALL;
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

// With define_sql's parameters: one row, the stored definition as text, when a limit of that name exists
// with other numbers (define_sql would redefine it); none otherwise.
std::string stored_differs_sql(const std::string &schema);

// Rows of request_all (row 0 first) or reserve_all, binary: the decisions; false if the shape is wrong.
bool read_request_all(const PGresult *result, std::size_t triples, CallOutcome &out);
bool read_request_one(const PGresult *result, CallOutcome &out);
// out[i] for the i-th request of a batch (BATCH_ONE: one triple each; BATCH_ALL: triples[i] each).
bool read_batch_one(const PGresult *result, std::size_t requests, std::vector<CallOutcome> &out);
bool read_batch_all(const PGresult *result, const std::vector<std::size_t> &triples, std::vector<CallOutcome> &out);
bool read_reserve_all(const PGresult *result, std::size_t triples, CallOutcome &out);

}  // namespace gate::limiter
