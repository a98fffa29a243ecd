// Direct access to rate_limit_state for the hot path, without SPI or the executor: a lookup through
// the hash index on limit_name || key (or the primary key while that index is unusable, see
// state_relations.hpp) that reads the heap page itself (so that it can prune the page only when nearly
// full) and checks the row's limit and key, then an in-place (usually HOT) update through the table
// access method. The table must therefore stay a heap table. New keys are still inserted with SQL
// (INSERT ... ON CONFLICT DO NOTHING, see statements.hpp), whose speculative insertion is not worth
// re-implementing for the first request of each key.
//
// What the executor would otherwise do, done here:
// - visibility: reads use the transaction snapshot (a fresh one per statement under READ COMMITTED),
//   with the current command id, so a call sees the writes of earlier calls in its transaction;
// - concurrency: an update of a version that a concurrent transaction changed reports "lost race"
//   under READ COMMITTED (the caller retries, locking the latest version) and raises 40001 under
//   REPEATABLE READ and SERIALIZABLE, exactly as UPDATE does; serializable predicate locks are taken by
//   the index and heap access methods themselves;
// - a non-HOT update inserts the new version into every index (the executor's routine); read-only
//   transactions are refused (25006).
// The table has no triggers, rules or checks to fire (state_relations_open refuses a table with any); the
// functions are SECURITY DEFINER, so no privilege check is due.
#pragma once

#include "core/limit.hpp"
#include "postgres_headers.hpp"
#include "state_relations.hpp"

namespace pg_ratelimit {

struct StateTable {
    StateRelations relations;
    TupleTableSlot *slot;  // the key's row after a successful fetch
    Datum limit_name;
    Datum key;
    Size row_bound;  // more than the key's row takes on a page
    ScanKeyData lookup_keys[2];
    int lookup_key_count;
    bool snapshot_pushed;  // an attempt's snapshot is active, from its fetch to its write or close
};

enum class WriteResult { written, lost_race };

void state_table_open(Oid extension, Oid schema, Datum limit_name, Datum key, StateTable *table);
void state_table_close(StateTable *table);

// Starts an attempt with the statement snapshot and reads the key's row visible to it into table->slot.
// Returns false if there is none.
bool state_table_fetch(StateTable *table, core::State *state);

// READ COMMITTED only: locks the newest version of the row fetched last (it may be newer than the
// snapshot) and reads it. Returns false if the row has been deleted meanwhile.
bool state_table_lock_latest(StateTable *table, core::State *state);

// Replaces the two numbers of the row fetched (or locked) last.
WriteResult state_table_update(StateTable *table, const core::State &next);

// Refuses writes where the executor would: read-only transactions, hot standby, parallel mode. `action`
// completes "cannot ... in a read-only transaction", e.g. "consume rate limit units".
void require_writable_transaction(const char *action);

}  // namespace pg_ratelimit
