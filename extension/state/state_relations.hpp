// A state table (rate_limit_state, or rate_limit_state_unlogged for unlogged limits) and the index a
// request finds its key through, opened for one call. Both tables are held to the same rules below.
//
// The OIDs are cached per backend, but a cached OID is only used after the table's lock has been taken
// (taking a lock accepts pending invalidations), and everything derived from the table (which index to
// read, where the four columns are, whether the table is still the extension's) is derived again from its
// current relcache entry whenever the table or one of those indexes changed: ALTER TABLE, CREATE / DROP
// INDEX, REINDEX (CONCURRENTLY swaps index OIDs), VACUUM FULL, CLUSTER, TRUNCATE, DROP and CREATE
// EXTENSION.
//
// The lookup index is the extension's hash index on (limit_name || key) while it is valid, and otherwise
// the unique btree on (limit_name, key, shard) (the primary key), so that a DBA can drop, rebuild or
// re-create the hash index under load without any request failing.
//
// A table that requests cannot update correctly is refused with SQLSTATE 55000 at the first call, never
// crashed on: one without the five columns as the install script made them, with triggers, rules, CHECK
// constraints, stored generated columns or forced row-level security (the direct path writes rows
// without firing or checking those), not an ordinary table, not the extension's own, or without a valid
// unique index on (limit_name, key, shard). Other columns a DBA adds are kept as they are by updates (as an
// UPDATE of value and ts would) and get their defaults on insert.
#pragma once

#include "extension_sql.hpp"
#include "postgres_headers.hpp"

namespace pg_ratelimit {

// Where the extension's columns are in the table (a DBA may have added and dropped others).
struct StateColumns {
    AttrNumber limit_name;
    AttrNumber key;
    AttrNumber shard;
    AttrNumber value;
    AttrNumber ts;
};

struct StateRelations {
    Relation heap;        // RowExclusiveLock, until the end of the transaction
    Relation lookup;      // AccessShareLock; nullptr unless opened with an index
    bool lookup_is_hash;  // the hash index on (limit_name || key); otherwise the btree on (limit_name, key, shard)
    // A unique index is ready but not valid: CREATE INDEX or REINDEX CONCURRENTLY is building it, or
    // REINDEX CONCURRENTLY is retiring it. INSERT ... ON CONFLICT takes no such index as an arbiter, so
    // two first inserts of one key can then fail with a unique violation instead of doing nothing
    // (insert_state_row handles that).
    bool unique_index_in_flux;
    StateColumns columns;
};

void state_relations_init();

// Opens the state table of the extension `extension` living in `schema`, checked as above, and, when
// with_lookup is set, the index to find keys through. `heap_only`: also refuse a table on another
// access method than heap (the direct path reads heap pages itself).
void state_relations_open(Oid extension, Oid schema, StateTable table, bool with_lookup, bool heap_only,
                          StateRelations *out);
void state_relations_close(StateRelations *relations);

// Opens and closes the table as above (the lock stays): for the SQL statements on it, which must not
// fire triggers as the owner or write a table that requests would then refuse. Returns
// unique_index_in_flux.
bool require_usable_state_table(Oid extension, Oid schema, StateTable table);

}  // namespace pg_ratelimit
