// The shared memory behind storage => 'memory' (memory_state.hpp says what it promises): the table of
// entries (core/memory_table.hpp), a lock per partition and a lock per slot. Shared by memory_state.cpp,
// which creates, saves, loads and maintains it, and access_memory.cpp, the access path on it.
#pragma once

#include "core/memory_table.hpp"
#include "postgres_headers.hpp"

namespace pg_ratelimit {

struct MemoryStore {
    core::MemoryTable table;
    LWLockPadded *partition_locks;  // one per partition: shared to find, exclusive to insert or delete
    LWLock *slot_locks;             // one per slot (core::MemoryTable::global_slot): held while deciding
};

// The store; ERROR 55000 if the library was not preloaded.
const MemoryStore &memory_store();

// The identity of (limit, key, shard) in the store's table.
core::MemoryIdentity memory_identity(const text *limit_name, const text *key, int shard, uint64 seed);

// Evictions that forgot keys' consumption: counted, and reported with a WARNING (at most one a minute
// per session) once the caller holds no lock.
void memory_note_evictions(const core::EvictionCounts &counts);
void memory_report_evictions();

}  // namespace pg_ratelimit
