#include "limiter/statements.hpp"

#include <algorithm>
#include <cstdint>

#include "limiter/binary.hpp"

namespace gate::limiter {

const char *const REQUEST_ALL = "gate_request_all";
const char *const REQUEST_ONE = "gate_request_one";
const char *const BATCH_ONE = "gate_batch_one";
const char *const BATCH_ALL = "gate_batch_all";
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
        {REQUEST_ONE, "SELECT " + s + "rate_limit_request($1, $2)", {TEXT_OID, TEXT_OID}},
        {BATCH_ONE,
         "SELECT t.i::int4, " + s +
             "rate_limit_request(t.k, t.l) FROM ROWS FROM (pg_catalog.unnest($1), pg_catalog.unnest($2))"
             " WITH ORDINALITY AS t(k, l, i)",
         {TEXT_ARRAY_OID, TEXT_ARRAY_OID}},
        {BATCH_ALL,
         "SELECT b.r, d.\"position\", d.allowed, d.remaining, d.retry_after, d.reset_after, d.shadow_denied"
         " FROM (SELECT t.r, pg_catalog.array_agg(t.k ORDER BY t.o) AS keys, pg_catalog.array_agg(t.l ORDER BY t.o)"
         " AS limits FROM ROWS FROM (pg_catalog.unnest($1), pg_catalog.unnest($2), pg_catalog.unnest($3))"
         " WITH ORDINALITY AS t(r, k, l, o) GROUP BY t.r) AS b CROSS JOIN LATERAL " +
             s + "rate_limit_request_all(b.keys, b.limits) AS d",
         {INT4_ARRAY_OID, TEXT_ARRAY_OID, TEXT_ARRAY_OID}},
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

std::string stored_differs_sql(const std::string &schema) {
    const std::string s = quote_identifier(schema) + ".";
    return "SELECT pg_catalog.format('rate %s per %s, %s, capacity %s, max_reserved %s, %s', c.rate, c.period,"
           " c.algorithm, c.capacity, c.max_reserved, c.storage) FROM " +
           s +
           "rate_limit_config AS c WHERE c.name = $1"
           " AND (c.rate, c.period, c.algorithm, c.capacity, c.max_reserved, c.storage)"
           " IS DISTINCT FROM ($2::float8, $3::interval, $4::text, $5::float8, $6::float8, $7::text)";
}

namespace {

// Columns first..first+4: allowed, remaining, retry_after, reset_after, shadow_denied.
bool read_decision(const PGresult *result, int row, int first, TripleDecision &out) {
    const int lengths[] = {1, 8, 16, 16, 1};
    for (int i = 0; i < 5; ++i) {
        if (PQgetisnull(result, row, first + i) || PQgetlength(result, row, first + i) != lengths[i]) return false;
    }
    out.allowed = PQgetvalue(result, row, first)[0] != 0;
    out.remaining = decode_int8(PQgetvalue(result, row, first + 1));
    out.retry_after = decode_interval(PQgetvalue(result, row, first + 2));
    out.reset_after = decode_interval(PQgetvalue(result, row, first + 3));
    out.shadow_denied = PQgetvalue(result, row, first + 4)[0] != 0;
    return true;
}

// A rate_limit_decision record, binary: the number of columns, then each column's type OID, length and
// bytes: allowed bool, remaining int8, retry_after and reset_after interval, shadow_denied bool.
bool read_record(const char *at, int length, TripleDecision &out) {
    const char *end = at + length;
    const auto column = [&](int expected_length) -> const char * {
        if (end - at < 8 || decode_int4(at + 4) != expected_length || end - at < 8 + expected_length) return nullptr;
        const char *value = at + 8;
        at += 8 + expected_length;
        return value;
    };
    if (end - at < 4 || decode_int4(at) != 5) return false;
    at += 4;
    const char *allowed = column(1);
    const char *remaining = column(8);
    const char *retry_after = column(16);
    const char *reset_after = column(16);
    const char *shadow_denied = column(1);
    if (allowed == nullptr || remaining == nullptr || retry_after == nullptr || reset_after == nullptr ||
        shadow_denied == nullptr) {
        return false;
    }
    out.allowed = allowed[0] != 0;
    out.remaining = decode_int8(remaining);
    out.retry_after = decode_interval(retry_after);
    out.reset_after = decode_interval(reset_after);
    out.shadow_denied = shadow_denied[0] != 0;
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
        if (!read_decision(result, row, 1, into)) return false;
    }
    return true;
}

}  // namespace

bool read_request_one(const PGresult *result, CallOutcome &out) {
    if (PQntuples(result) != 1 || PQnfields(result) != 1 || PQbinaryTuples(result) != 1 || PQgetisnull(result, 0, 0)) {
        return false;
    }
    TripleDecision d;
    if (!read_record(PQgetvalue(result, 0, 0), PQgetlength(result, 0, 0), d)) return false;
    out.each.assign(1, d);
    out.overall = d;
    return true;
}

bool read_batch_one(const PGresult *result, std::size_t requests, std::vector<CallOutcome> &out) {
    if (PQntuples(result) != static_cast<int>(requests) || PQnfields(result) != 2 || PQbinaryTuples(result) != 1) {
        return false;
    }
    out.assign(requests, CallOutcome{});
    std::vector<bool> seen(requests, false);
    for (int row = 0; row < static_cast<int>(requests); ++row) {
        if (PQgetisnull(result, row, 0) || PQgetlength(result, row, 0) != 4 || PQgetisnull(result, row, 1))
            return false;
        const std::int32_t i = decode_int4(PQgetvalue(result, row, 0));
        if (i < 1 || i > static_cast<std::int32_t>(requests) || seen[static_cast<std::size_t>(i - 1)]) return false;
        seen[static_cast<std::size_t>(i - 1)] = true;
        TripleDecision d;
        if (!read_record(PQgetvalue(result, row, 1), PQgetlength(result, row, 1), d)) return false;
        CallOutcome &into = out[static_cast<std::size_t>(i - 1)];
        into.each.assign(1, d);
        into.overall = d;
    }
    return true;
}

bool read_batch_all(const PGresult *result, const std::vector<std::size_t> &triples, std::vector<CallOutcome> &out) {
    std::size_t rows = 0;
    for (const std::size_t n : triples) rows += n + 1;
    if (PQntuples(result) != static_cast<int>(rows) || PQnfields(result) != 7 || PQbinaryTuples(result) != 1) {
        return false;
    }
    out.assign(triples.size(), CallOutcome{});
    for (std::size_t i = 0; i < triples.size(); ++i) out[i].each.assign(triples[i], TripleDecision{});
    for (int row = 0; row < static_cast<int>(rows); ++row) {
        if (PQgetisnull(result, row, 0) || PQgetlength(result, row, 0) != 4 || PQgetisnull(result, row, 1) ||
            PQgetlength(result, row, 1) != 4) {
            return false;
        }
        const std::int32_t r = decode_int4(PQgetvalue(result, row, 0));
        const std::int32_t position = decode_int4(PQgetvalue(result, row, 1));
        if (r < 1 || r > static_cast<std::int32_t>(triples.size())) return false;
        CallOutcome &into = out[static_cast<std::size_t>(r - 1)];
        if (position < 0 || position > static_cast<std::int32_t>(into.each.size())) return false;
        if (!read_decision(result, row, 2,
                           position == 0 ? into.overall : into.each[static_cast<std::size_t>(position - 1)])) {
            return false;
        }
    }
    return true;
}

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
