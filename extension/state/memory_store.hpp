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

// Evictions that forgot keys' consumption: reported with a WARNING when the transaction ends (all of
// them: at most one WARNING a minute per session, with the total since the last one).
void memory_note_evictions(const core::EvictionCounts &counts);

// pg_ratelimit.memory_eviction = lru (the default): a full table forgets its least recently used keys;
// none: it forgets only keys back at full capacity, and a new key finding no room is an error.
bool memory_may_evict_not_full();

}  // namespace pg_ratelimit
