// Per-key tiers: what an override is, the limit it makes for its key, and reading rate_limit_override.
//
// An override replaces a limit's rate, capacity and max_reserved for one key; everything else (period,
// algorithm, start, shards, storage, jitter, epoch) stays the limit's. A capacity or max_reserved left
// NULL follows the limit: the limit's, scaled by the override's rate over the limit's rate (so the burst
// ratio is kept; unlimited reservations stay unlimited, none stay none).
//
// Every read here runs between extension_sql_begin and _end (extension_sql.hpp: the schema pinned by OID)
// after require_usable_override_table (override_relation.hpp).
#pragma once

#include "core/limit.hpp"
#include "extension_sql.hpp"
#include "postgres_headers.hpp"

namespace pg_ratelimit {

struct Override {
    double rate;
    double capacity;      // NaN: NULL, the limit's scaled
    double max_reserved;  // NaN: NULL, the limit's scaled; +infinity: unlimited
};

// The limit `limit` becomes for a key with the override (not validated).
core::Limit apply_override(const core::Limit &limit, const Override &value);

// ERROR 22023 (require_valid_limit's messages) unless `effective` is a valid limit, with a context line
// naming the key and the limit.
void require_valid_override(const core::Limit &effective, const text *limit_name, const char *key, int key_length);

// The override of (limit_name, key) as `snapshot` sees it; false if there is none. `scan` as given to
// extension_sql_begin (Scan::one_key under SERIALIZABLE plans an index scan).
bool override_read(Datum limit_name, Datum key, Snapshot snapshot, Override *value);

// Whether rate_limit_override has any row at all, as `snapshot` sees it.
bool override_any(Snapshot snapshot);

// Every override of one limit, sorted by key (byte order), as `snapshot` sees them; at most `max_rows`
// (0: all; more_rows then tells whether there were more). palloc'd in the current memory context; the keys
// point into the SPI result, valid until the caller's extension_sql_end (do not nest another SPI
// connection around this call).
struct OverrideSet {
    int count;
    bool more_rows;
    const char **keys;  // not NUL-terminated
    int *key_lengths;
    Override *values;
};
OverrideSet *override_set_read(Datum limit_name, Snapshot snapshot, long max_rows);
// The override of `key` in the set (nullptr: none), or nullptr.
const Override *override_set_find(const OverrideSet *set, const char *key, int key_length);
// The limit a key's state is kept under: the set's override applied to `limit`, or `limit`.
core::Limit override_set_limit(const OverrideSet *set, const core::Limit &limit, const char *key, int key_length);

// An override from the columns (rate, capacity, max_reserved) at `first` onwards of an SPI row. ERROR
// 23502 for a NULL rate (a DBA may have dropped the constraint).
Override override_from_row(HeapTuple row, TupleDesc desc, int first);

}  // namespace pg_ratelimit
