#include "limiter/statements.hpp"

#include <algorithm>
#include <cstdint>

#include "limiter/binary.hpp"

namespace gate::limiter {

const char *const REQUEST_ALL = "gate_request_all";
const char *const RESERVE_ALL = "gate_reserve_all";
const char *const REFUND_ALL = "gate_refund_all";

std::string quote_identifier(const std::string &name) {
    std::string out = "\"";
    for (const char c : name) out += c == '"' ? std::string("\"\"") : std::string(1, c);
    return out + '"';
}

std::vector<PreparedStatement> prepared_statements(const std::string &schema) {
    const std::string s = quote_identifier(schema) + ".";
    return {
        {REQUEST_ALL,
         "SELECT \"position\", allowed, remaining, retry_after, reset_after, shadow_denied FROM " + s +
             "rate_limit_request_all($1, $2)",
         {TEXT_ARRAY_OID, TEXT_ARRAY_OID}},
        // Each reservation in the order given (the caller puts table limits first, in one canonical order,
        // and memory limits last, as request_all does): one statement, one round trip.
        {RESERVE_ALL,
         "SELECT t.i::int4, d.allowed, d.remaining, d.retry_after, d.reset_after, d.shadow_denied"
         " FROM ROWS FROM (pg_catalog.unnest($1), pg_catalog.unnest($2), pg_catalog.unnest($3)) WITH ORDINALITY AS "
         "t(k, l, w, i)"
         " CROSS JOIN LATERAL " +
             s + "rate_limit_reserve(t.k, t.l, 1, t.w) AS d ORDER BY t.i",
         {TEXT_ARRAY_OID, TEXT_ARRAY_OID, INTERVAL_ARRAY_OID}},
        {REFUND_ALL,
         "SELECT (" + s +
             "rate_limit_refund(t.k, t.l, 1)).allowed FROM ROWS FROM (pg_catalog.unnest($1), pg_catalog.unnest($2)) AS "
             "t(k, l)",
         {TEXT_ARRAY_OID, TEXT_ARRAY_OID}},
    };
}

std::string define_sql(const std::string &schema) {
    const std::string s = quote_identifier(schema) + ".";
    return "SELECT " + s +
           "rate_limit_define($1, $2::float8, $3::interval, $4, capacity => $5::float8,"
           " max_reserved => $6::float8, storage => $7, jitter => c.jitter, shadow => coalesce(c.shadow, false))"
           " FROM (SELECT) AS one LEFT JOIN " +
           s +
           "rate_limit_config AS c ON c.name = $1"
           " WHERE c.name IS NULL OR (c.rate, c.period, c.algorithm, c.capacity, c.max_reserved, c.storage)"
           " IS DISTINCT FROM ($2::float8, $3::interval, $4, $5::float8, $6::float8, $7)";
}

namespace {

// The columns after the first: allowed, remaining, retry_after, reset_after, shadow_denied.
bool read_decision(const PGresult *result, int row, TripleDecision &out) {
    for (int column = 0; column < 6; ++column) {
        if (PQgetisnull(result, row, column)) return false;
    }
    if (PQgetlength(result, row, 1) != 1 || PQgetlength(result, row, 2) != 8 || PQgetlength(result, row, 3) != 16 ||
        PQgetlength(result, row, 4) != 16 || PQgetlength(result, row, 5) != 1) {
        return false;
    }
    out.allowed = PQgetvalue(result, row, 1)[0] != 0;
    out.remaining = decode_int8(PQgetvalue(result, row, 2));
    out.retry_after = decode_interval(PQgetvalue(result, row, 3));
    out.reset_after = decode_interval(PQgetvalue(result, row, 4));
    out.shadow_denied = PQgetvalue(result, row, 5)[0] != 0;
    return true;
}

bool read_rows(const PGresult *result, std::size_t triples, bool with_overall, CallOutcome &out) {
    const std::size_t rows = triples + (with_overall ? 1 : 0);
    if (PQntuples(result) != static_cast<int>(rows) || PQnfields(result) != 6 || PQbinaryTuples(result) != 1) {
        return false;
    }
    out.each.assign(triples, TripleDecision{});
    for (int row = 0; row < static_cast<int>(rows); ++row) {
        if (PQgetlength(result, row, 0) != 4) return false;
        const std::int32_t position = decode_int4(PQgetvalue(result, row, 0));
        const std::int32_t first = with_overall ? 0 : 1;
        if (position < first || position > static_cast<std::int32_t>(triples)) return false;
        TripleDecision &into = position == 0 ? out.overall : out.each[static_cast<std::size_t>(position - 1)];
        if (!read_decision(result, row, into)) return false;
    }
    return true;
}

}  // namespace

bool read_request_all(const PGresult *result, std::size_t triples, CallOutcome &out) {
    return read_rows(result, triples, true, out);
}

bool read_reserve_all(const PGresult *result, std::size_t triples, CallOutcome &out) {
    if (!read_rows(result, triples, false, out)) return false;
    // The call as a whole, as request_all would sum it up.
    out.overall = TripleDecision{true, INT64_MAX, {}, {}, false};
    for (const auto &d : out.each) {
        out.overall.allowed = out.overall.allowed && d.allowed;
        out.overall.remaining = std::min(out.overall.remaining, d.remaining);
        out.overall.retry_after = std::max(out.overall.retry_after, d.retry_after);
        out.overall.reset_after = std::max(out.overall.reset_after, d.reset_after);
        out.overall.shadow_denied = out.overall.shadow_denied || d.shadow_denied;
    }
    return true;
}

}  // namespace gate::limiter
