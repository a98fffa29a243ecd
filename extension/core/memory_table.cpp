// The shared-memory state table (memory_table.hpp).
#include "core/memory_table.hpp"

#include <cstring>
#include <new>
#include <type_traits>

namespace pg_ratelimit::core {
namespace {

constexpr std::uint64_t MAGIC = 0x70675f726c6d656dULL;  // "pg_rlmem"
constexpr std::size_t LINE = 64;

struct TableHeader {
    std::uint64_t magic;
    std::uint64_t seed;
    std::uint32_t partitions;
    std::uint32_t slots;
};

// A partition's counters alone on their cache line.
struct PartitionHeader {
    MemoryPartitionCounters counters;
    unsigned char padding[LINE - sizeof(MemoryPartitionCounters)];
};

static_assert(sizeof(TableHeader) <= LINE && sizeof(PartitionHeader) == LINE, "the layout counts in lines");
static_assert(sizeof(MemoryEntry) % LINE == 0 && alignof(MemoryEntry) <= LINE, "entries start on lines");

bool power_of_two(std::uint32_t n) noexcept { return n != 0 && (n & (n - 1)) == 0; }

bool valid_sizes(std::uint32_t partitions, std::uint32_t slots) noexcept {
    return power_of_two(partitions) && partitions <= MEMORY_TABLE_MAX_PARTITIONS && power_of_two(slots) &&
           slots >= MEMORY_TABLE_MIN_SLOTS && slots <= MEMORY_TABLE_MAX_SLOTS;
}

std::size_t partition_headers_offset() noexcept { return LINE; }
std::size_t entries_offset(std::uint32_t partitions) noexcept {
    return LINE + static_cast<std::size_t>(partitions) * sizeof(PartitionHeader);
}

std::uint32_t log2_of(std::uint32_t power) noexcept {
    std::uint32_t bits = 0;
    while ((1U << bits) < power) ++bits;
    return bits;
}

bool used(const MemoryEntry &entry) noexcept { return entry.identity.length != 0; }

// One partition's slots and counters: the operations below work on this.
struct Partition {
    MemoryEntry *slots;
    std::uint32_t mask;  // slots - 1
    MemoryPartitionCounters *counters;

    [[nodiscard]] std::uint32_t home(const MemoryIdentity &identity) const noexcept {
        return static_cast<std::uint32_t>(identity.hash) & mask;
    }

    [[nodiscard]] int find(const MemoryIdentity &identity) const noexcept {
        std::uint32_t i = home(identity);
        // At most max_entries() < slots entries: an empty slot always ends the probe; the bound is a guard.
        for (std::uint32_t probes = 0; probes <= mask; ++probes, i = (i + 1) & mask) {
            const MemoryEntry &entry = slots[i];
            if (!used(entry)) return -1;
            if (entry.identity.hash == identity.hash && memory_identity_equal(entry.identity, identity))
                return static_cast<int>(i);
        }
        return -1;
    }

    // Backward-shift deletion: the hole left at `slot` is filled by the next entry of the cluster whose
    // probe sequence passes over the hole (its home is cyclically at or before the hole), which leaves a
    // hole where that entry was; repeated up to the end of the cluster. Every remaining entry stays
    // reachable from its home without crossing an empty slot, and entries only ever move backwards, to
    // slots between the deleted one and the end of its cluster.
    void remove(std::uint32_t slot) noexcept {
        std::uint32_t hole = slot;
        for (std::uint32_t j = (slot + 1) & mask; used(slots[j]); j = (j + 1) & mask) {
            const std::uint32_t from_home = (j - home(slots[j].identity)) & mask;
            const std::uint32_t from_hole = (j - hole) & mask;
            if (from_home >= from_hole) {
                slots[hole] = slots[j];
                hole = j;
            }
        }
        slots[hole] = MemoryEntry{};
        --counters->entries;
    }

    // Deletes every entry for which drop(entry) is true, in one pass. The pass starts just after an empty
    // slot and goes once round: a deletion at the current slot only moves entries of the same cluster,
    // which lie ahead of it and stop before the next empty slot, back to the current slot or later. So
    // the entries already passed never move and every entry is offered to drop() exactly once; a slot
    // whose entry was deleted is examined again for the entry moved into it.
    template <typename Drop>
    int remove_if(Drop &&drop) noexcept {
        if (counters->entries == 0) return 0;
        std::uint32_t start = 0;
        while (used(slots[start])) ++start;  // exists: entries < slots
        int removed = 0;
        for (std::uint32_t step = 1; step <= mask; ++step) {
            const std::uint32_t i = (start + step) & mask;
            while (used(slots[i]) && drop(slots[i])) {
                remove(i);
                ++removed;
            }
        }
        return removed;
    }

    // The k-th smallest last_used (1 <= k <= entries), and how many entries equal to it rank within
    // the k smallest (the others rank before). A radix selection on last_used - min, 8 bits a pass from
    // the highest significant bit down: each pass histograms the entries that share the digits chosen so
    // far and picks the digit holding the k-th. Timestamps of one table usually span less than 2^40
    // microseconds (12 days), i.e. 5 passes.
    void select_lru(std::uint32_t k, Micros *threshold, std::uint32_t *ties) const noexcept {
        bool any = false;
        Micros min = 0;
        Micros max = 0;
        for (std::uint32_t i = 0; i <= mask; ++i) {
            if (!used(slots[i])) continue;
            const Micros t = slots[i].last_used;
            if (!any || t < min) min = t;
            if (!any || t > max) max = t;
            any = true;
        }
        const auto offset = [min](Micros t) noexcept {
            return static_cast<std::uint64_t>(t) - static_cast<std::uint64_t>(min);
        };
        const std::uint64_t range = offset(max);
        std::uint32_t bits = 0;
        while (bits < 64 && (range >> bits) != 0) ++bits;
        std::uint64_t chosen = 0;  // the digits of the k-th offset chosen so far, at their places
        std::uint32_t rank = k;    // its rank among the entries sharing those digits
        for (std::uint32_t top = (bits + 7) / 8 * 8; top > 0; top -= 8) {
            const std::uint32_t shift = top - 8;
            std::uint32_t histogram[256] = {};
            for (std::uint32_t i = 0; i <= mask; ++i) {
                if (!used(slots[i])) continue;
                const std::uint64_t off = offset(slots[i].last_used);
                // Same digits above this one (none above the first digit).
                if (top < 64 && (off >> top) != (chosen >> top)) continue;
                ++histogram[(off >> shift) & 0xff];
            }
            std::uint32_t digit = 0;
            while (rank > histogram[digit]) rank -= histogram[digit++];
            chosen |= static_cast<std::uint64_t>(digit) << shift;
        }
        // Wraps back into the int64 range: min + chosen <= max.
        *threshold = static_cast<Micros>(static_cast<std::uint64_t>(min) + chosen);
        *ties = rank;
    }
};

}  // namespace

namespace {

// The little-endian bytes of a value, appended at `at`.
template <typename T>
std::size_t put(unsigned char *out, std::size_t at, T value) noexcept {
    static_assert(std::is_trivially_copyable_v<T>);
    std::uint64_t bits = 0;
    std::memcpy(&bits, &value, sizeof(T));
    for (std::size_t i = 0; i < sizeof(T); ++i) out[at + i] = static_cast<unsigned char>(bits >> (8 * i));
    return at + sizeof(T);
}

std::uint64_t epoch_bits(std::uint64_t epoch) noexcept {
    unsigned char bytes[sizeof(epoch)];
    (void)put(bytes, 0, epoch);
    return memory_hash_bytes(bytes, sizeof(bytes), 0);
}

}  // namespace

std::uint64_t memory_definition(const Limit &limit) noexcept {
    const std::uint64_t shape = static_cast<std::uint64_t>(limit.algorithm) |
                                (static_cast<std::uint64_t>((limit.shards - 1) & 0xff) << 8) |
                                ((epoch_bits(limit.epoch) & 0xffffff) << 16);
    unsigned char numbers[64];
    std::size_t at = put(numbers, 0, limit.rate);
    at = put(numbers, at, limit.period);
    at = put(numbers, at, limit.capacity);
    at = put(numbers, at, static_cast<std::uint8_t>(limit.has_start));
    at = put(numbers, at, limit.has_start ? limit.start : Micros{0});
    at = put(numbers, at, static_cast<std::uint8_t>(limit.calendar.unit));
    at = put(numbers, at, limit.calendar.count);
    at = put(numbers, at, limit.calendar.zone == nullptr ? std::uint64_t{0} : limit.calendar.zone->id);
    std::uint64_t hashed = memory_hash_bytes(numbers, at, 0) & 0xffffff;
    if ((hashed << 40) == MEMORY_NUMBERS_UNKNOWN) hashed ^= 1;  // never taken for unknown numbers
    return shape | (hashed << 40);
}

std::uint64_t memory_definition_from_0_1(std::uint64_t saved) noexcept {
    const std::uint64_t algorithm = saved & 0xff;
    const std::uint64_t shards = (saved >> 8) & 0xffff;
    // 0.1.0 mixed the same epoch hash into bits 24-63: its low 24 bits are this shape's epoch bits.
    const std::uint64_t epoch = (saved >> 24) & 0xffffff;
    return algorithm | (((shards - 1) & 0xff) << 8) | (epoch << 16) | MEMORY_NUMBERS_UNKNOWN;
}

std::size_t memory_table_bytes(std::uint32_t partitions, std::uint32_t slots) noexcept {
    if (!valid_sizes(partitions, slots)) return 0;
    return entries_offset(partitions) + static_cast<std::size_t>(partitions) * slots * sizeof(MemoryEntry);
}

bool memory_table_init(void *base, std::uint32_t partitions, std::uint32_t slots, std::uint64_t seed) noexcept {
    if (base == nullptr || !valid_sizes(partitions, slots)) return false;
    if (reinterpret_cast<std::uintptr_t>(base) % alignof(MemoryEntry) != 0) return false;
    auto *bytes = static_cast<unsigned char *>(base);
    // Zero is the empty state of every part (an empty slot has length 0); the objects are then created
    // in place, trivially.
    std::memset(bytes, 0, memory_table_bytes(partitions, slots));
    auto *headers = bytes + partition_headers_offset();
    for (std::uint32_t p = 0; p < partitions; ++p) new (headers + p * sizeof(PartitionHeader)) PartitionHeader{};
    auto *entries = bytes + entries_offset(partitions);
    const std::size_t count = static_cast<std::size_t>(partitions) * slots;
    for (std::size_t i = 0; i < count; ++i) new (entries + i * sizeof(MemoryEntry)) MemoryEntry{};
    // The header last: a table is valid once its magic is there.
    new (bytes) TableHeader{MAGIC, seed, partitions, slots};
    return true;
}

MemoryTable::MemoryTable(void *base) noexcept {
    if (base == nullptr) return;
    const auto *header = static_cast<const TableHeader *>(base);
    if (header->magic != MAGIC || !valid_sizes(header->partitions, header->slots)) return;
    base_ = static_cast<unsigned char *>(base);
    partitions_ = header->partitions;
    slots_ = header->slots;
    partition_bits_ = log2_of(partitions_);
    seed_ = header->seed;
}

MemoryEntry *MemoryTable::slots_of(std::uint32_t partition) const noexcept {
    return reinterpret_cast<MemoryEntry *>(base_ + entries_offset(partitions_)) +
           static_cast<std::size_t>(partition) * slots_;
}

MemoryPartitionCounters *MemoryTable::counters_of(std::uint32_t partition) const noexcept {
    return &reinterpret_cast<PartitionHeader *>(base_ + partition_headers_offset())[partition].counters;
}

const MemoryPartitionCounters &MemoryTable::counters(std::uint32_t partition) const noexcept {
    return *counters_of(partition);
}

int MemoryTable::find(std::uint32_t partition, const MemoryIdentity &identity) const noexcept {
    return Partition{slots_of(partition), slots_ - 1, counters_of(partition)}.find(identity);
}

MemoryInsert MemoryTable::insert(std::uint32_t partition, const MemoryIdentity &identity, std::uint64_t definition,
                                 Micros now, bool evict_not_full) noexcept {
    Partition part{slots_of(partition), slots_ - 1, counters_of(partition)};
    MemoryInsert result;
    result.slot = part.find(identity);
    if (result.slot >= 0) return result;
    if (part.counters->entries >= max_entries())
        evict(partition, now, evict_not_full ? eviction_batch() : 0, &result.evicted);
    if (part.counters->entries >= max_entries()) {
        result.slot = -1;  // only entries that are not full, which may not be evicted
        return result;
    }
    std::uint32_t i = part.home(identity);
    while (used(part.slots[i])) i = (i + 1) & part.mask;  // below max_entries: an empty slot exists
    MemoryEntry &entry = part.slots[i];
    entry = MemoryEntry{};
    entry.identity = identity;
    entry.last_used = now;
    entry.full_at = MEMORY_NO_STATE;
    entry.definition = definition;
    ++part.counters->entries;
    result.slot = static_cast<int>(i);
    result.created = true;
    return result;
}

MemoryInsert MemoryTable::restore(std::uint32_t partition, const MemoryEntry &saved, Micros now) noexcept {
    if (!memory_identity_valid(saved.identity) || saved.full_at <= now) return MemoryInsert{};
    MemoryInsert result = insert(partition, saved.identity, saved.definition, now);
    MemoryEntry &entry = slots_of(partition)[result.slot];
    entry.state = saved.state;
    entry.last_used = saved.last_used;
    entry.full_at = saved.full_at;
    entry.definition = saved.definition;
    return result;
}

void MemoryTable::remove(std::uint32_t partition, int slot) noexcept {
    if (slot < 0 || static_cast<std::uint32_t>(slot) >= slots_) return;
    Partition part{slots_of(partition), slots_ - 1, counters_of(partition)};
    if (used(part.slots[slot])) part.remove(static_cast<std::uint32_t>(slot));
}

int MemoryTable::evict(std::uint32_t partition, Micros now, int want, EvictionCounts *counts) noexcept {
    Partition part{slots_of(partition), slots_ - 1, counters_of(partition)};
    const int full = part.remove_if([now](const MemoryEntry &entry) noexcept { return entry.full_at <= now; });
    int not_full = 0;
    if (full < want && part.counters->entries > 0) {
        const auto k = static_cast<std::uint32_t>(want - full) < part.counters->entries
                           ? static_cast<std::uint32_t>(want - full)
                           : part.counters->entries;
        Micros threshold = 0;
        std::uint32_t ties = 0;
        part.select_lru(k, &threshold, &ties);
        not_full = part.remove_if([threshold, &ties](const MemoryEntry &entry) noexcept {
            if (entry.last_used < threshold) return true;
            if (entry.last_used > threshold || ties == 0) return false;
            --ties;
            return true;
        });
    }
    part.counters->evicted_full += static_cast<std::uint64_t>(full);
    part.counters->evicted_not_full += static_cast<std::uint64_t>(not_full);
    if (counts != nullptr) {
        counts->full += full;
        counts->not_full += not_full;
    }
    return full + not_full;
}

int MemoryTable::purge_limit(std::uint32_t partition, std::uint64_t limit_hash) noexcept {
    Partition part{slots_of(partition), slots_ - 1, counters_of(partition)};
    return part.remove_if(
        [limit_hash](const MemoryEntry &entry) noexcept { return entry.identity.limit_hash == limit_hash; });
}

int MemoryTable::purge_database(std::uint32_t partition, std::uint32_t database) noexcept {
    Partition part{slots_of(partition), slots_ - 1, counters_of(partition)};
    return part.remove_if(
        [database](const MemoryEntry &entry) noexcept { return entry.identity.database == database; });
}

int MemoryTable::sweep_full(std::uint32_t partition, Micros now) noexcept {
    Partition part{slots_of(partition), slots_ - 1, counters_of(partition)};
    return part.remove_if([now](const MemoryEntry &entry) noexcept { return entry.full_at <= now; });
}

int MemoryTable::sweep_full(std::uint32_t partition, Micros now, std::uint64_t limit_hash) noexcept {
    Partition part{slots_of(partition), slots_ - 1, counters_of(partition)};
    return part.remove_if([now, limit_hash](const MemoryEntry &entry) noexcept {
        return entry.identity.limit_hash == limit_hash && entry.full_at <= now;
    });
}

}  // namespace pg_ratelimit::core
