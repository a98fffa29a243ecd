// How a call reads and writes a key's row in rate_limit_state: one interface, one file per access path.
//
//   direct (access_direct.cpp)  the key's row found through an index and updated in place through the
//                               table access method: PostgreSQL heap tables only, the fastest.
//   sql    (access_sql.cpp)     prepared SQL through SPI and nothing else: works wherever the table is
//                               not a heap table, in particular on YugabyteDB.
//
// settle() (settle.hpp) drives both the same way: fetch the row with the statement's snapshot, decide,
// then update it compare-and-set (or insert it); under READ COMMITTED a lost race is followed by
// lock_latest, which locks the newest version and reads it. A key of a sharded limit has one row per
// shard (core/shards.hpp): settle() first peeks at all of them to choose one, then works on that one. Both paths behave
// as UPDATE does under concurrency: waiting on a row lock under READ COMMITTED, 40001 on a concurrent update under
// REPEATABLE READ and SERIALIZABLE.
//
// The path is chosen per call by state_access_for(), from the setting pg_ratelimit.access_path (auto,
// direct, sql; superusers only, or roles granted SET on it) and, for auto, from the server and the
// table's access method.
#pragma once

#include "core/limit.hpp"
#include "core/memory_identity.hpp"
#include "postgres_headers.hpp"
#include "state/state_relations.hpp"

namespace pg_ratelimit {

// The key a call is about, and its limit's definition (the storage chooses the table or memory).
struct StateTarget {
    Oid extension;
    Oid schema;
    Datum limit_name;
    Datum key;
    core::Limit limit;
    core::Micros origin;  // the key's window grid (core::window_origin)
    // Memory entries made under other numbers of the limit's definition are read as they are (the limit's
    // definition was read again and is this one: an entry of a standby, or of an older release), instead of
    // stopping the call (StateHandle::stale_definition).
    bool accept_other_numbers = false;
};

// The table of a durable or unlogged limit.
inline StateTable state_table_of(const StateTarget &target) {
    return target.limit.storage == core::Storage::unlogged ? StateTable::unlogged : StateTable::logged;
}

// The direct path's working state (access_direct.cpp).
struct DirectState {
    StateRelations relations;
    TupleTableSlot *slot;  // the row of the shard fetched last
    Size row_bound;        // more than the key's row takes on a page
    ScanKeyData lookup_keys[2];
    int lookup_key_count;
    bool snapshot_pushed;  // an attempt's snapshot is active, from its fetch to its write or close
};

// The SQL path's working state (access_sql.cpp).
struct SqlState {
    // The row's numbers as fetched or locked last: what the compare-and-set expects. (Not a core::State,
    // whose default member initializers would make this union member non-trivial.)
    double read_value;
    core::Micros read_ts;
    ItemPointerData read_ctid;  // where it was read (invalid on YugabyteDB)
    bool guard_insert;          // StateRelations::unique_index_in_flux
    int sql_token;              // extension_sql_begin's, from open to close
};

// The memory path's working state (access_memory.cpp).
struct MemoryState {
    enum class Held : uint8 { nothing, entry, partition };  // entry: partition shared + slot; partition: exclusive
    Held held;
    uint64 definition;  // core::memory_definition of the limit
    uint64 seed;        // of the table's placement hash
    uint32 partition;
    int slot;  // -1: the key has no entry yet (the partition is then held exclusively)
    core::MemoryIdentity identity;
};

enum class WriteResult { written, lost_race };

// One row of the key, as peek() reports it.
struct ShardRow {
    core::State state;
    int16 shard;
    // A concurrent transaction is modifying the row or modified it after the snapshot (the direct path
    // reads it on the tuple, the SQL path from the row's xmax; on YugabyteDB it says false).
    bool busy;
};

struct StateAccess;

// One call's handle on its row. Plain data: the access paths keep nothing that needs a destructor.
struct StateHandle {
    const StateAccess *access;
    StateTarget target;
    // The clock reading the call's decision was made at, set before update or insert (the memory table
    // dates its entries by it: a stored ts is not a time for every algorithm).
    core::Micros decided_at;
    // The memory access path met an entry made under other numbers of the limit (a change committing, or
    // committed since the call read its definition): nothing was decided; the caller reads the definition
    // again and decides anew (decide_key.cpp).
    bool stale_definition;
    union {
        DirectState direct;
        SqlState sql;
        MemoryState memory;
    };
};

struct StateAccess {
    const char *name;
    // Writes go into the transaction (a table): refused where the executor would refuse them (read-only
    // transactions, standbys). Memory state is written outside any transaction.
    bool transactional;
    void (*open)(StateHandle *handle);
    // The row of the key's `shard` as the statement's snapshot sees it; false if there is none.
    bool (*fetch)(StateHandle *handle, int16 shard, core::State *state);
    // After a fetch found no row and the call decided to write none (a check, a refund or a denial): the
    // decision rests on the row's absence, so under SERIALIZABLE a concurrent insert of it must conflict
    // with this transaction. (A call that inserts the row needs nothing: the unique index settles a race.)
    void (*rely_on_absence)(StateHandle *handle, int16 shard);
    // The key's rows, at most `capacity` of them: what settle() chooses a shard by. An estimate, read
    // without the serializable predicate locks a fetch takes on the direct path (the call must not depend,
    // for SSI, on shards it does not use); the SQL path reads them with a plain SELECT.
    int (*peek)(StateHandle *handle, ShardRow *rows, int capacity);
    // READ COMMITTED only: locks the newest version of the shard's row and reads it; false if it was deleted.
    bool (*lock_latest)(StateHandle *handle, int16 shard, core::State *state);
    // Replaces the shard's two numbers if its row still holds what fetch or lock_latest read last;
    // lost_race (READ COMMITTED) if a concurrent transaction changed or deleted it first. Raises 40001
    // under REPEATABLE READ and SERIALIZABLE, as UPDATE does.
    WriteResult (*update)(StateHandle *handle, int16 shard, const core::State &next);
    // Inserts the shard's first row; false if a concurrent transaction inserted it first.
    bool (*insert)(StateHandle *handle, int16 shard, const core::State &next);
    void (*close)(StateHandle *handle);
};

extern const StateAccess direct_access;
extern const StateAccess sql_access;
extern const StateAccess memory_access;

// Inserts a key's first row with SQL (both paths do): false if a concurrent transaction inserted it first.
// `guarded`: a unique index is in flux (StateRelations::unique_index_in_flux), so a concurrent first insert
// may show as a unique violation: the insert then runs in a subtransaction that reports it as a lost race.
bool insert_state_row(const StateTarget &target, int16 shard, const core::State &next, bool guarded);

// Registers pg_ratelimit.access_path and detects the server kind.
void state_access_init();

// Opens a handle on the target's row with the access path the setting and the server call for.
void state_access_open(const StateTarget &target, StateHandle *handle);

// pg_ratelimit.access_path = direct: the direct path must refuse a table it cannot read, not hand over.
bool access_path_is_forced_direct();

// Refuses writes where the executor would: read-only transactions, hot standby, parallel mode. `action`
// completes "cannot ... in a read-only transaction", e.g. "consume rate limit units".
void require_writable_transaction(const char *action);

}  // namespace pg_ratelimit
