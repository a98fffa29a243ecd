// The SQL the extension runs on its own tables, prepared once per backend and kept (SPI_keepplan).
// Table names are qualified with the extension's schema and every operator with pg_catalog, so the
// caller's search_path can change nothing (the functions are SECURITY DEFINER). User input only ever
// travels as parameters.
#pragma once

#include "postgres_headers.hpp"

namespace pg_ratelimit {

// Reading and updating existing keys, the hot path, bypasses SQL altogether (state_table.hpp).
struct Statements {
    Oid schema;
    // $1 limit_name, $2 key, $3 value, $4 ts; does nothing if the key exists
    SPIPlanPtr insert_state;
    // $1 limit_name, $2 key
    SPIPlanPtr delete_state;
    // $1 name -> algorithm, rate, period, capacity, max_reserved, start
    SPIPlanPtr select_limit;
};

// The statements for the extension living in `schema`. Requires SPI_connect; prepares on first use and
// again if the extension was re-created in another schema.
const Statements &statements_for(Oid schema);

// "schema".table for cold-path SQL (palloc'd).
char *qualified_table(Oid schema, const char *table);

}  // namespace pg_ratelimit
