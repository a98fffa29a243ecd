// The access path of memory limits: a key's shard is an entry of the shared-memory table
// (memory_store.hpp) instead of a row.
//
// fetch finds the entry holding its partition's lock in shared mode and the entry's own lock, or, for a
// key without an entry, its partition's lock exclusively (so that no one else can insert the key
// meanwhile); update or insert writes the decision and releases them. So a decision is made and stored
// atomically, concurrent calls on one key wait their turn, and a write never loses a race: settle()
// needs one attempt. Nothing here is transactional (see memory_state.hpp).
//
// An entry whose key is back at full capacity, or that was made under another algorithm, shard count or
// epoch (core::memory_shape), counts as no entry: the decision starts from a full key. One made under other
// numbers of the same shape (core::memory_definition) means a change of the limit is committing or
// committed since the call read its definition: nothing is decided (StateHandle::stale_definition), and
// decide_key waits for the change and reads the definition again; if that is the call's, the entry is older
// than any change this server carried over (a standby's, an older release's) and is read as it is. Between
// token bucket and GCRA, which hold the same balance in two forms, an entry made under the other is
// converted.
#include <algorithm>

#include "clock.hpp"
#include "core/algorithms.hpp"
#include "core/rescale.hpp"
#include "core/shards.hpp"
#include "state/memory_store.hpp"
#include "state/state_access.hpp"

namespace pg_ratelimit {
namespace {

core::MemoryTable &table_of(const MemoryStore &memory) { return const_cast<core::MemoryTable &>(memory.table); }

LWLock *partition_lock(const MemoryStore &memory, uint32 partition) { return &memory.partition_locks[partition].lock; }

LWLock *slot_lock(const MemoryStore &memory, uint32 partition, int slot) {
    return &memory.slot_locks[memory.table.global_slot(partition, slot)];
}

void release(StateHandle *handle) {
    MemoryState &state = handle->memory;
    const MemoryStore &memory = memory_store();
    if (state.held == MemoryState::Held::entry) {
        LWLockRelease(slot_lock(memory, state.partition, state.slot));
        LWLockRelease(partition_lock(memory, state.partition));
    } else if (state.held == MemoryState::Held::partition) {
        LWLockRelease(partition_lock(memory, state.partition));
    }
    state.held = MemoryState::Held::nothing;
}

// The limit under the other of token bucket and GCRA.
core::Limit other_form(core::Limit limit) {
    limit.algorithm = limit.algorithm == core::Algorithm::gcra ? core::Algorithm::token_bucket : core::Algorithm::gcra;
    return limit;
}

// The entry's state, if it holds one that counts (see the top of the file). An entry whose key is back
// at full capacity is passed on as it is: the decisions it gives are those of no entry, and not reading
// the clock here saves a clock read per call.

bool current_state(StateHandle *handle, const core::MemoryEntry &entry, core::State *state) {
    if (entry.full_at == core::MEMORY_NO_STATE) return false;
    if (entry.definition == handle->memory.definition) {
        *state = entry.state;
        return true;
    }
    // Rare, worked out only here, off the hot path: the entry was made under another definition of the limit.
    const core::Limit &target = handle->target.limit;
    const bool converts =
        target.algorithm == core::Algorithm::token_bucket || target.algorithm == core::Algorithm::gcra;
    const uint64 other = converts ? core::memory_definition(other_form(target)) : 0;
    const core::Limit limit = core::shard_limit(target);
    // The same numbers under the other of token bucket and GCRA: the balance kept, in this algorithm's form.
    if (converts && entry.definition == other) {
        *state = core::rescaled_state(other_form(limit), limit, entry.state, clock_now(), 0, 0, core::Rescale::as_is);
        return true;
    }
    const bool same_shape = core::memory_shape(entry.definition) == core::memory_shape(handle->memory.definition);
    const bool other_shape = converts && core::memory_shape(entry.definition) == core::memory_shape(other);
    if (!same_shape && !other_shape) return false;  // another algorithm, shards or epoch: meaningless, absent
    // Other numbers: a change of the limit is committing, or committed since this call read the definition.
    // Nothing is decided: the call reads the definition again (decide_key.cpp). If that is this one, the
    // entry is older than the changes this server carried over (a standby's, an older release's): its
    // numbers are read as they are.
    if (!handle->target.accept_other_numbers) {
        handle->stale_definition = true;
        return false;
    }
    *state = same_shape
                 ? entry.state
                 : core::rescaled_state(other_form(limit), limit, entry.state, clock_now(), 0, 0, core::Rescale::as_is);
    return true;
}

void memory_open(StateHandle *handle) {
    MemoryState &state = handle->memory;
    state.held = MemoryState::Held::nothing;
    state.definition = core::memory_definition(handle->target.limit);
    state.seed = memory_store().table.seed();
}

bool memory_fetch(StateHandle *handle, int16 shard, core::State *stored) {
    release(handle);
    MemoryState &state = handle->memory;
    const MemoryStore &memory = memory_store();
    core::MemoryTable &table = table_of(memory);
    // Computed before any lock is taken: it allocates, and may fail.
    state.identity = memory_identity(DatumGetTextPP(handle->target.limit_name), DatumGetTextPP(handle->target.key),
                                     shard, state.seed);
    state.partition = table.partition_of(state.identity.hash);
    LWLockAcquire(partition_lock(memory, state.partition), LW_SHARED);
    state.slot = table.find(state.partition, state.identity);
    if (state.slot >= 0) {
        LWLockAcquire(slot_lock(memory, state.partition, state.slot), LW_EXCLUSIVE);
        state.held = MemoryState::Held::entry;
        return current_state(handle, table.entry(state.partition, state.slot), stored);
    }
    // No entry: hold the partition exclusively until the decision is stored (or not).
    LWLockRelease(partition_lock(memory, state.partition));
    LWLockAcquire(partition_lock(memory, state.partition), LW_EXCLUSIVE);
    state.held = MemoryState::Held::partition;
    state.slot = table.find(state.partition, state.identity);  // inserted meanwhile?
    return state.slot >= 0 && current_state(handle, table.entry(state.partition, state.slot), stored);
}

void memory_rely_on_absence(StateHandle *, int16) {}

int memory_peek(StateHandle *handle, ShardRow *rows, int capacity) {
    const MemoryStore &memory = memory_store();
    core::MemoryTable &table = table_of(memory);
    int count = 0;
    for (int shard = 0; shard < handle->target.limit.shards && count < capacity; ++shard) {
        const core::MemoryIdentity identity = memory_identity(
            DatumGetTextPP(handle->target.limit_name), DatumGetTextPP(handle->target.key), shard, handle->memory.seed);
        const uint32 partition = table.partition_of(identity.hash);
        LWLockAcquire(partition_lock(memory, partition), LW_SHARED);
        const int slot = table.find(partition, identity);
        if (slot >= 0) {
            // A shard another call is deciding on is busy: its figures are read once it is done.
            LWLock *lock = slot_lock(memory, partition, slot);
            const bool busy = !LWLockConditionalAcquire(lock, LW_EXCLUSIVE);
            if (busy) LWLockAcquire(lock, LW_EXCLUSIVE);
            core::State state;
            if (current_state(handle, table.entry(partition, slot), &state))
                rows[count++] = ShardRow{state, static_cast<int16>(shard), busy};
            LWLockRelease(lock);
        }
        LWLockRelease(partition_lock(memory, partition));
    }
    return count;
}

// Stores the decision in the entry fetch found or, for a key without one, in a new entry.
void store(StateHandle *handle, int16 shard, const core::State &next) {
    MemoryState &state = handle->memory;
    core::MemoryTable &table = table_of(memory_store());
    // The decision's clock reading (not next.ts: GCRA stores an instant in the future there, the sliding
    // window one within its window; dating the entry by it would evict entries that are not full).
    const core::Micros now = handle->decided_at;
    if (state.slot < 0) {
        const core::MemoryInsert inserted =
            table.insert(state.partition, state.identity, state.definition, now, memory_may_evict_not_full());
        memory_note_evictions(inserted.evicted);
        if (inserted.slot < 0) {
            release(handle);
            // A limit in shadow mode must never fail the call it only watches: the key goes unrecorded.
            if (handle->target.limit.shadow) return;
            ereport(ERROR,
                    (errcode(ERRCODE_CONFIGURATION_LIMIT_EXCEEDED), errmsg("the memory state table is full"),
                     errdetail("Every entry of the key's partition holds a key that is not back at full capacity, and "
                               "pg_ratelimit.memory_eviction = none forbids forgetting one."),
                     errhint("Raise pg_ratelimit.memory_keys and restart the server.")));
        }
        state.slot = inserted.slot;
    }
    core::MemoryEntry &entry = table.entry(state.partition, state.slot);
    const core::Limit shard_limit = core::shard_limit(handle->target.limit);
    entry.state = next;
    entry.definition = state.definition;
    entry.last_used = now;
    // A key is back at full capacity after time_to_full; at least a microsecond from now, so that the
    // entry is never taken for an absent one before then.
    entry.full_at = now + std::max<core::Micros>(1, core::time_to_full(shard_limit, &next, now, handle->target.origin));
    (void)shard;
    release(handle);
}

bool memory_lock_latest(StateHandle *handle, int16 shard, core::State *stored) {
    return memory_fetch(handle, shard, stored);
}

WriteResult memory_update(StateHandle *handle, int16 shard, const core::State &next) {
    store(handle, shard, next);
    return WriteResult::written;
}

bool memory_insert(StateHandle *handle, int16 shard, const core::State &next) {
    store(handle, shard, next);
    return true;
}

void memory_close(StateHandle *handle) { release(handle); }

}  // namespace

const StateAccess memory_access = {
    "memory",           false,         memory_open,   memory_fetch, memory_rely_on_absence, memory_peek,
    memory_lock_latest, memory_update, memory_insert, memory_close};

}  // namespace pg_ratelimit
