// The state table of the `memory` storage mode: each (limit, key, shard)'s State held in memory the
// caller provides (PostgreSQL shared memory, in the glue) instead of a table row. Pure data structure:
// no PostgreSQL headers, no allocation, no locking, every type trivially copyable.
//
// Layout. P partitions (a power of two) of S slots each (a power of two); memory_table_bytes(P, S) bytes:
//     header (64 bytes) | P partition headers (64 bytes each: counters) | P * S entries (128 bytes each)
// Each part starts at a multiple of 64 bytes from the base, so with a cache-line aligned base no two
// partitions' counters share a line. An identity's partition is given by the high bits of its hash, its
// home slot within the partition by the low bits. Within a partition: open addressing, linear probing
// from the home slot, deletion by backward shift (no tombstones), and at most max_entries() = 7/8 of S
// entries, so that probe sequences stay short: insert() evicts a batch first when the partition is at
// that load.
//
// Locking (the glue's; this code never locks). Every operation works on one partition, and the glue
// holds that partition's lock: shared for find(), entry() and for_each(); exclusive for insert(),
// restore(), remove(), evict(), purge_limit() and sweep_full(), the only operations that move or
// delete entries. So a slot index returned by find() (or insert()) keeps naming the same entry for as
// long as the caller keeps holding the partition's lock, in either mode, and runs none of the exclusive
// operations itself: the glue may then lock that slot's own lock (its per-slot array, indexed by
// global_slot()) and read or write the entry's state, last_used, full_at and definition. The identity of
// an entry is never written outside the exclusive operations. Slot locks are taken only while holding
// the partition's lock (shared), never the other way round: so the exclusive holder, who moves and drops
// entries, can never meet a slot lock held by someone else. A whole entry read under the shared lock
// alone (for_each, when saving) may see a state half written by a slot-lock holder: save under the
// exclusive lock, or with no writer left (at shutdown).
//
// Absent keys. An entry whose full_at <= now is back at full capacity: it is equivalent to no entry at
// all (the glue passes no state to the algorithms), and eviction or sweep_full may drop it without losing
// anything. A new entry has full_at = MEMORY_NO_STATE, so it reads as absent until the glue stores a
// decision in it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <limits>
#include <type_traits>

#include "core/limit.hpp"
#include "core/memory_identity.hpp"

namespace pg_ratelimit::core {

// full_at of an entry that holds no state yet.
inline constexpr Micros MEMORY_NO_STATE = std::numeric_limits<Micros>::min();

struct MemoryEntry {
    MemoryIdentity identity;   // identity.length == 0: the slot is empty
    State state;               // meaningful only while full_at > now
    Micros last_used;          // the glue sets it at every use; eviction drops the smallest first
    Micros full_at;            // when the key is back at full capacity (now + the decision's reset_after)
    std::uint64_t definition;  // fingerprint of the limit's definition the state was computed under
};

// Two cache lines: 88 (identity) + 16 (state) + 8 + 8 + 8.
static_assert(sizeof(MemoryEntry) == 128, "keep MemoryEntry two cache lines");
static_assert(std::is_trivially_copyable_v<MemoryEntry> && std::is_standard_layout_v<MemoryEntry>,
              "entries live in shared memory and are saved to files byte for byte");

// A fingerprint of the definition an entry's state was computed under, in two parts.
// - Its shape, bits 0-39: what makes a stored state meaningless when it changes: the algorithm (bits 0-7)
//   and the number of shards (bits 8-15, shards - 1), exactly, and the limit's epoch (Limit::epoch, mixed
//   into bits 16-39: two epochs share a shape with a probability of 2^-24).
// - Its numbers, bits 40-63: a hash of the rate, period, capacity, start and calendar, which give the
//   state its meaning: the same state read under other numbers is another balance. MEMORY_NUMBERS_UNKNOWN
//   there: numbers not known (an entry saved by release 0.1.0, whose fingerprint had no such part).
// An entry of the same shape and other numbers is carried over when a change commits; a call that meets
// one meanwhile waits for the change, or reads the definition again (access_memory.cpp).
[[nodiscard]] std::uint64_t memory_definition(const Limit &limit) noexcept;
inline constexpr std::uint64_t MEMORY_SHAPE_BITS = (std::uint64_t{1} << 40) - 1;
inline constexpr std::uint64_t MEMORY_NUMBERS_UNKNOWN = std::uint64_t{0xffffff} << 40;
[[nodiscard]] inline std::uint64_t memory_shape(std::uint64_t definition) noexcept {
    return definition & MEMORY_SHAPE_BITS;
}
// The fingerprint release 0.1.0 saved (algorithm, shards in bits 8-23, the epoch's hash in bits 24-63), as
// this one: the same shape, its numbers unknown.
[[nodiscard]] std::uint64_t memory_definition_from_0_1(std::uint64_t saved) noexcept;

inline constexpr std::uint32_t MEMORY_TABLE_MAX_PARTITIONS = 1U << 16;
inline constexpr std::uint32_t MEMORY_TABLE_MIN_SLOTS = 16;
inline constexpr std::uint32_t MEMORY_TABLE_MAX_SLOTS = 1U << 16;

// Counters of one partition. The exclusive operations update them; the glue reads them under the
// partition's lock (or without it, for approximate statistics).
struct MemoryPartitionCounters {
    std::uint64_t evicted_full;      // entries evict() dropped that were full (nothing lost)
    std::uint64_t evicted_not_full;  // entries evict() dropped that were not: their consumption is forgotten
    std::uint32_t entries;           // entries held
};

// What one evict() (or the eviction inside an insert()) dropped.
struct EvictionCounts {
    int full = 0;
    int not_full = 0;  // keys whose consumption was forgotten, i.e. units given back: report these
};

struct MemoryInsert {
    int slot = -1;         // the entry's slot in the partition; -1: no room (see insert()) or see restore()
    bool created = false;  // false: the identity was already present, the entry is untouched
    EvictionCounts evicted{};
};

// The bytes a table of `partitions` x `slots` needs; 0 if either is not a power of two within
// [1, MEMORY_TABLE_MAX_PARTITIONS] and [MEMORY_TABLE_MIN_SLOTS, MEMORY_TABLE_MAX_SLOTS]. A multiple of 64.
[[nodiscard]] std::size_t memory_table_bytes(std::uint32_t partitions, std::uint32_t slots) noexcept;

// Sets up an empty table in memory_table_bytes(partitions, slots) bytes at base (aligned to 8 bytes at
// least; 64 keeps partitions on their own cache lines). `seed` is the placement seed every identity put
// in this table must be made with (memory_identity.hpp); MemoryTable::seed() gives it back. False, and
// nothing written, if the sizes or the alignment are wrong.
[[nodiscard]] bool memory_table_init(void *base, std::uint32_t partitions, std::uint32_t slots,
                                     std::uint64_t seed) noexcept;

// A non-owning view of a table set up by memory_table_init (in any process that maps the memory).
class MemoryTable {
  public:
    // valid() is false if base does not hold a table.
    explicit MemoryTable(void *base) noexcept;

    [[nodiscard]] bool valid() const noexcept { return base_ != nullptr; }
    [[nodiscard]] std::uint32_t partitions() const noexcept { return partitions_; }
    [[nodiscard]] std::uint32_t slots() const noexcept { return slots_; }
    [[nodiscard]] std::uint64_t seed() const noexcept { return seed_; }
    // The most entries a partition holds: 7/8 of its slots.
    [[nodiscard]] std::uint32_t max_entries() const noexcept { return slots_ - slots_ / 8; }
    // How many entries insert() frees when the partition is at max_entries(): 1/16 of its slots.
    [[nodiscard]] int eviction_batch() const noexcept { return static_cast<int>(slots_ / 16); }

    // The partition of an identity: the high bits of its hash.
    [[nodiscard]] std::uint32_t partition_of(std::uint64_t hash) const noexcept {
        return partition_bits_ == 0 ? 0 : static_cast<std::uint32_t>(hash >> (64 - partition_bits_));
    }
    // The index of (partition, slot) among all the table's slots, for the glue's per-slot locks.
    [[nodiscard]] std::size_t global_slot(std::uint32_t partition, int slot) const noexcept {
        return static_cast<std::size_t>(partition) * slots_ + static_cast<std::size_t>(slot);
    }

    // The slot holding `identity` in `partition`, or -1. Shared lock.
    [[nodiscard]] int find(std::uint32_t partition, const MemoryIdentity &identity) const noexcept;

    // The slot of `identity`: the existing entry if there is one (created = false, untouched), else a
    // new one with no state (state zero, full_at = MEMORY_NO_STATE, last_used = now, `definition`). When
    // the partition is at max_entries(), evicts eviction_batch() entries first (evict(), at `now`).
    // Exclusive lock. `partition` must be partition_of(identity.hash).
    // With evict_not_full false, only entries full at now are evicted; if that frees nothing, nothing is
    // inserted (slot -1).
    MemoryInsert insert(std::uint32_t partition, const MemoryIdentity &identity, std::uint64_t definition, Micros now,
                        bool evict_not_full = true) noexcept;

    // Loading a saved entry: inserts saved.identity as insert() does (evicting if needed) and copies the
    // saved state, last_used, full_at and definition into the entry (over any entry already there).
    // Slot -1, nothing done, if the saved identity is malformed (memory_identity_valid) or the saved
    // entry is already full at now (it would be equivalent to no entry). The caller first rehashes the
    // identity with this table's seed and passes partition_of() of the new hash. Exclusive lock.
    MemoryInsert restore(std::uint32_t partition, const MemoryEntry &saved, Micros now) noexcept;

    // Deletes the entry in `slot` (nothing if the slot is empty); entries after it in its cluster may
    // move back one or more slots. Exclusive lock.
    void remove(std::uint32_t partition, int slot) noexcept;

    // Frees at least `want` slots, if the partition holds that many entries: first every entry full at
    // now (whatever their number: they cost nothing), then, if fewer than `want` were full, exactly the
    // missing number of the least recently used (smallest last_used; among equal last_used, any).
    // Returns the entries dropped, adds them to *counts (if not null) and to the partition's counters.
    // O(S) per call: a few passes of a radix selection of the threshold, then one deleting scan.
    // Exclusive lock.
    int evict(std::uint32_t partition, Micros now, int want, EvictionCounts *counts) noexcept;

    // Deletes every entry whose identity.limit_hash is limit_hash (a dropped or redefined limit);
    // returns how many. Exclusive lock.
    int purge_limit(std::uint32_t partition, std::uint64_t limit_hash) noexcept;
    // Deletes every entry of a database (identity.database: a dropped database, or an extension dropped
    // from it); returns how many. Exclusive lock.
    int purge_database(std::uint32_t partition, std::uint32_t database) noexcept;

    // Deletes every entry full at now (full_at <= now); returns how many. Not counted as evictions.
    // Exclusive lock.
    int sweep_full(std::uint32_t partition, Micros now) noexcept;
    // The same for the entries of one limit only (limit_hash as in purge_limit).
    int sweep_full(std::uint32_t partition, Micros now, std::uint64_t limit_hash) noexcept;

    // The entry in a slot (empty when entry.identity.length == 0). Shared lock to read; writing the
    // state, last_used, full_at or definition also needs the slot's own lock, or the exclusive one.
    [[nodiscard]] MemoryEntry &entry(std::uint32_t partition, int slot) noexcept { return slots_of(partition)[slot]; }
    [[nodiscard]] const MemoryEntry &entry(std::uint32_t partition, int slot) const noexcept {
        return slots_of(partition)[slot];
    }

    [[nodiscard]] const MemoryPartitionCounters &counters(std::uint32_t partition) const noexcept;

    // Calls fn(slot, const MemoryEntry &) for every entry of the partition, in slot order (saving the
    // table to a file). fn must not throw, and must not insert or delete entries. Shared lock.
    template <typename Fn>
    void for_each(std::uint32_t partition, Fn &&fn) const noexcept {
        const MemoryEntry *slots = slots_of(partition);
        for (std::uint32_t i = 0; i < slots_; ++i)
            if (slots[i].identity.length != 0) fn(static_cast<int>(i), slots[i]);
    }

  private:
    [[nodiscard]] MemoryEntry *slots_of(std::uint32_t partition) const noexcept;
    [[nodiscard]] MemoryPartitionCounters *counters_of(std::uint32_t partition) const noexcept;

    unsigned char *base_ = nullptr;
    std::uint32_t partitions_ = 0;
    std::uint32_t slots_ = 0;
    std::uint32_t partition_bits_ = 0;  // log2(partitions)
    std::uint64_t seed_ = 0;
};

}  // namespace pg_ratelimit::core
