// Named limits, read from rate_limit_config and cached per backend.
//
// The cache is a catalog-style cache: entries are read with the latest snapshot (so a transaction that
// started before a redefinition never caches the old row), and are dropped when rate_limit_config
// changes. A statement trigger on the table (rate_limit_config_changed) queues a relcache invalidation
// for it; PostgreSQL delivers that to this backend at the next command (our own change, undone again on
// rollback) and to every other backend when the change commits.
#pragma once

#include "core/limit.hpp"
#include "extension_sql.hpp"
#include "postgres_headers.hpp"

namespace pg_ratelimit {

inline constexpr int MAX_LIMIT_NAME_BYTES = 128;

// A backend-local hash table of `entry_size`-byte entries whose first member is a limit's name (a
// NUL-terminated char[MAX_LIMIT_NAME_BYTES + 1]), allocated in `context`.
HTAB *create_limit_name_table(const char *what, Size entry_size, MemoryContext context);

void limit_cache_init();
// Empties this backend's cache: the next lookups read the table again.
void limit_cache_reset();

// The limit named `name` of the extension in `schema`; ERROR 42704 if there is none, 22001 if the name
// is longer than any limit's can be. A cache hit runs no SQL; a miss reads rate_limit_config through SPI
// (connecting, nested if need be).
core::Limit limit_lookup(Oid extension, Oid schema, const text *name);
// The same, false where limit_lookup raises 42704.
bool limit_find(Oid extension, Oid schema, const text *name, core::Limit *limit);

// Reads a limit's row as `snapshot` sees it, bypassing the cache; false if there is none. Needs
// extension_sql_begin() and require_usable_config_table() first.
bool limit_read(Datum name, Snapshot snapshot, core::Limit *limit);

// A limit from a row of the columns select_limit reads (extension_sql.hpp), in that order; not validated.
// ERROR 23502 for a NULL where the table declares NOT NULL (a DBA may have dropped the constraint).
// first_column: where LIMIT_COLUMNS begin in the row (2 in a row of rate_limit_config itself).
core::Limit limit_from_row(HeapTuple row, TupleDesc desc, int first_column = 1);
// Whether such a row has a value in every column the table declares NOT NULL.
bool limit_row_complete(HeapTuple row, TupleDesc desc, int first_column = 1);

// ERROR 22001 for a name over MAX_LIMIT_NAME_BYTES.
void require_limit_name_length(const text *name);

// Converts a config row's fields, raising 22023 for a value the core cannot use; shared with
// rate_limit_define so both paths accept exactly the same limits.
core::Algorithm algorithm_from_text(const char *name);
const char *algorithm_name(core::Algorithm algorithm);
core::Storage storage_from_text(const char *name);
const char *storage_name(core::Storage storage);
core::Micros period_micros(const Interval *period);
core::Micros jitter_micros(const Interval *jitter);
void require_valid_limit(const core::Limit &limit);

}  // namespace pg_ratelimit
