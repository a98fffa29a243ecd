// The C++ / PostgreSQL boundary.
//
// PostgreSQL reports errors with longjmp, which skips C++ destructors, and a C++ exception must never
// unwind through PostgreSQL frames. The extension keeps both safe by construction:
// - the glue (every file outside core/) is written without objects that have non-trivial destructors,
//   so an ereport(ERROR) may longjmp out of it at any point without skipping cleanup;
// - the core is noexcept and allocation-free (core/limit.hpp static_asserts its types are trivial);
// - every SQL-callable function runs its body through run_sql_entry, which catches any C++ exception
//   that might still appear (a future std:: container throwing bad_alloc, say) and turns it into an
//   ERROR only after the catch block has ended, i.e. after every C++ object is gone.
#pragma once

#include <exception>

#include "postgres_headers.hpp"

namespace pg_ratelimit {

using SqlBody = Datum (*)(FunctionCallInfo fcinfo);

inline Datum run_sql_entry(FunctionCallInfo fcinfo, SqlBody body) {
    char message[256] = "unknown C++ exception";
    try {
        return body(fcinfo);
    } catch (const std::exception &e) {
        strlcpy(message, e.what(), sizeof(message));
    } catch (...) {
    }
    ereport(ERROR, (errcode(ERRCODE_INTERNAL_ERROR), errmsg("pg_ratelimit internal error: %s", message)));
    pg_unreachable();
}

}  // namespace pg_ratelimit

// Defines the extern "C" symbol PostgreSQL calls for SQL function `name`, running `body` behind the
// boundary above.
#define PG_RATELIMIT_SQL_FUNCTION(name, body)                                            \
    extern "C" {                                                                         \
    PG_FUNCTION_INFO_V1(name);                                                           \
    Datum name(PG_FUNCTION_ARGS) { return ::pg_ratelimit::run_sql_entry(fcinfo, body); } \
    }
