// The shared-memory state table (core/memory_table.hpp): layout, probing and backward-shift deletion
// against a model, eviction order and counts, purge, sweep, and the save/load round trip.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <map>
#include <random>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "core/memory_table.hpp"

namespace pg_ratelimit::core {
namespace {

constexpr std::uint64_t kSeed = 42;

// Table memory, aligned to a cache line as the glue's shared memory is.
class Storage {
  public:
    Storage(std::uint32_t partitions, std::uint32_t slots, std::uint64_t seed = kSeed)
        : size_(memory_table_bytes(partitions, slots)),
          bytes_(static_cast<unsigned char *>(std::aligned_alloc(64, size_))) {
        EXPECT_TRUE(memory_table_init(bytes_, partitions, slots, seed));
    }
    ~Storage() { std::free(bytes_); }
    Storage(const Storage &) = delete;
    Storage &operator=(const Storage &) = delete;
    [[nodiscard]] MemoryTable table() const { return MemoryTable(bytes_); }
    [[nodiscard]] unsigned char *bytes() const { return bytes_; }

  private:
    std::size_t size_;
    unsigned char *bytes_;
};

MemoryIdentity Ident(const std::string &limit, int key, std::uint64_t seed = kSeed) {
    MemoryIdentity identity{};
    const std::string text = "key-" + std::to_string(key);
    EXPECT_TRUE(memory_identity_inline(limit.data(), limit.size(), text.data(), text.size(), 0, seed, &identity));
    return identity;
}

// An identity whose hash is forced, to pile entries onto chosen home slots.
MemoryIdentity Forced(const std::string &limit, int key, std::uint64_t hash) {
    MemoryIdentity identity = Ident(limit, key);
    identity.hash = hash;
    return identity;
}

// What holds after every operation: the partition's entries are each reachable from their home slot
// without crossing an empty slot (so find() reaches them), unique, counted, and within the load bound.
void CheckPartition(const MemoryTable &table, std::uint32_t partition) {
    const std::uint32_t mask = table.slots() - 1;
    std::uint32_t count = 0;
    for (std::uint32_t i = 0; i <= mask; ++i) {
        const MemoryEntry &entry = table.entry(partition, static_cast<int>(i));
        if (entry.identity.length == 0) continue;
        ++count;
        for (std::uint32_t j = static_cast<std::uint32_t>(entry.identity.hash) & mask; j != i; j = (j + 1) & mask)
            ASSERT_NE(table.entry(partition, static_cast<int>(j)).identity.length, 0) << "gap before slot " << i;
        ASSERT_EQ(table.find(partition, entry.identity), static_cast<int>(i));
    }
    ASSERT_EQ(count, table.counters(partition).entries);
    ASSERT_LE(count, table.max_entries());
}

TEST(MemoryTable, SizesAndAlignment) {
    EXPECT_EQ(memory_table_bytes(1, 16), 64U + 64U + 16U * 128U);
    EXPECT_EQ(memory_table_bytes(256, 1024), 64U + 256U * 64U + 256U * 1024U * 128U);
    for (const std::uint32_t p : {1U, 2U, 64U, 1024U, MEMORY_TABLE_MAX_PARTITIONS})
        for (const std::uint32_t s : {16U, 64U, 4096U, MEMORY_TABLE_MAX_SLOTS})
            EXPECT_EQ(memory_table_bytes(p, s) % 64, 0U);
    EXPECT_EQ(memory_table_bytes(0, 64), 0U);
    EXPECT_EQ(memory_table_bytes(3, 64), 0U);
    EXPECT_EQ(memory_table_bytes(64, 8), 0U);
    EXPECT_EQ(memory_table_bytes(64, 100), 0U);
    EXPECT_EQ(memory_table_bytes(MEMORY_TABLE_MAX_PARTITIONS * 2, 64), 0U);
    EXPECT_EQ(memory_table_bytes(64, MEMORY_TABLE_MAX_SLOTS * 2), 0U);
    EXPECT_EQ(sizeof(MemoryEntry), 128U);

    // Partitions' first entries and counters on cache lines of their own, inside the memory.
    Storage storage(4, 16);
    const MemoryTable table = storage.table();
    ASSERT_TRUE(table.valid());
    EXPECT_EQ(table.partitions(), 4U);
    EXPECT_EQ(table.slots(), 16U);
    EXPECT_EQ(table.seed(), kSeed);
    const auto *begin = storage.bytes();
    const auto *end = begin + memory_table_bytes(4, 16);
    for (std::uint32_t p = 0; p < 4; ++p) {
        const auto *first = reinterpret_cast<const unsigned char *>(&table.entry(p, 0));
        const auto *last = reinterpret_cast<const unsigned char *>(&table.entry(p, 15));
        EXPECT_EQ(reinterpret_cast<std::uintptr_t>(first) % 64, 0U);
        EXPECT_EQ(reinterpret_cast<std::uintptr_t>(&table.counters(p)) % 64, 0U);
        EXPECT_GE(reinterpret_cast<const unsigned char *>(&table.counters(p)), begin);
        EXPECT_GE(first, begin);
        EXPECT_LE(last + sizeof(MemoryEntry), end);
        EXPECT_EQ(table.counters(p).entries, 0U);
    }
    // The last entry of the last partition ends exactly at the end.
    EXPECT_EQ(reinterpret_cast<const unsigned char *>(&table.entry(3, 15)) + sizeof(MemoryEntry), end);

    // Refused: bad sizes, a null or misaligned base; a view of memory without a table is invalid.
    EXPECT_FALSE(memory_table_init(storage.bytes(), 3, 16, 0));
    EXPECT_FALSE(memory_table_init(nullptr, 1, 16, 0));
    EXPECT_FALSE(memory_table_init(storage.bytes() + 4, 1, 16, 0));
    std::vector<std::uint64_t> garbage(64, 0x5555555555555555ULL);
    EXPECT_FALSE(MemoryTable(garbage.data()).valid());
    EXPECT_FALSE(MemoryTable(nullptr).valid());
}

TEST(MemoryTable, PartitionFromHighBitsSlotFromLowBits) {
    Storage storage(256, 16);
    const MemoryTable table = storage.table();
    EXPECT_EQ(table.partition_of(0xab00000000000000ULL), 0xabU);
    EXPECT_EQ(table.partition_of(0x00ffffffffffffffULL), 0U);
    EXPECT_EQ(table.global_slot(3, 5), 3U * 16U + 5U);
    Storage single(1, 16);
    EXPECT_EQ(single.table().partition_of(~std::uint64_t{0}), 0U);
    // The home slot is the hash's low bits: a lone entry lands there.
    MemoryTable one = single.table();
    const MemoryInsert at = one.insert(0, Forced("l", 1, 0xfff0000000000007ULL), 0, 0);
    EXPECT_EQ(at.slot, 7);
}

TEST(MemoryTable, InsertCreatesOnceWithNoState) {
    Storage storage(2, 16);
    MemoryTable table = storage.table();
    const MemoryIdentity id = Ident("api", 1);
    const std::uint32_t p = table.partition_of(id.hash);
    EXPECT_EQ(table.find(p, id), -1);
    const MemoryInsert first = table.insert(p, id, 77, 1000);
    ASSERT_TRUE(first.created);
    ASSERT_GE(first.slot, 0);
    const MemoryEntry &entry = table.entry(p, first.slot);
    EXPECT_TRUE(memory_identity_equal(entry.identity, id));
    EXPECT_EQ(entry.state.value, 0);
    EXPECT_EQ(entry.state.ts, 0);
    EXPECT_EQ(entry.full_at, MEMORY_NO_STATE);
    EXPECT_EQ(entry.last_used, 1000);
    EXPECT_EQ(entry.definition, 77U);
    EXPECT_EQ(table.find(p, id), first.slot);
    // Present already: same slot, untouched.
    table.entry(p, first.slot).state = {5, 900};
    const MemoryInsert second = table.insert(p, id, 78, 2000);
    EXPECT_FALSE(second.created);
    EXPECT_EQ(second.slot, first.slot);
    EXPECT_EQ(table.entry(p, first.slot).state.value, 5);
    EXPECT_EQ(table.entry(p, first.slot).definition, 77U);
    EXPECT_EQ(table.counters(p).entries, 1U);
    table.remove(p, first.slot);
    EXPECT_EQ(table.find(p, id), -1);
    EXPECT_EQ(table.counters(p).entries, 0U);
    table.remove(p, first.slot);  // an empty slot: nothing
    table.remove(p, -1);
    table.remove(p, 16);
    EXPECT_EQ(table.counters(p).entries, 0U);
}

TEST(MemoryTable, CollidingHomesAcrossTheWrap) {
    Storage storage(1, 16);
    MemoryTable table = storage.table();
    // 14 entries (the maximum load) all wanting slot 13: the cluster wraps round to slot 10.
    std::vector<MemoryIdentity> ids;
    for (int k = 0; k < 14; ++k) {
        ids.push_back(Forced("l", k, 13));
        const MemoryInsert at = table.insert(0, ids.back(), 0, k);
        ASSERT_TRUE(at.created);
        EXPECT_EQ(at.slot, (13 + k) % 16);
        EXPECT_EQ(at.evicted.full + at.evicted.not_full, 0);
    }
    CheckPartition(table, 0);
    // Removing from the middle of the chain shifts the rest back: all remain findable.
    for (const int k : {0, 5, 13, 2}) {
        table.remove(0, table.find(0, ids[k]));
        EXPECT_EQ(table.find(0, ids[k]), -1);
        CheckPartition(table, 0);
    }
    for (int k = 0; k < 14; ++k) {
        if (k != 0 && k != 5 && k != 13 && k != 2) {
            EXPECT_GE(table.find(0, ids[k]), 0) << k;
        }
    }
    // Entries whose home is inside another's cluster must not move before their home.
    Storage mixed_storage(1, 16);
    MemoryTable mixed = mixed_storage.table();
    const MemoryIdentity a = Forced("l", 100, 14);
    const MemoryIdentity b = Forced("l", 101, 15);
    const MemoryIdentity c = Forced("l", 102, 14);  // lands at 0, past b
    const MemoryIdentity d = Forced("l", 103, 1);   // lands at 1, its home
    for (const MemoryIdentity &id : {a, b, c, d}) ASSERT_TRUE(mixed.insert(0, id, 0, 0).created);
    EXPECT_EQ(mixed.find(0, c), 0);
    mixed.remove(0, mixed.find(0, b));  // c moves back to 15; d stays home
    EXPECT_EQ(mixed.find(0, c), 15);
    EXPECT_EQ(mixed.find(0, d), 1);
    CheckPartition(mixed, 0);
}

// Thousands of random inserts, removals, finds, evictions, purges and sweeps, with hashes piled onto a few homes
// (and across the wrap), checked against a std::map after every operation.
TEST(MemoryTable, RandomOperationsAgainstAModel) {
    constexpr int kKeys = 300;
    const std::string limits[] = {"a", "b", "c"};
    std::mt19937_64 random(2024);
    Storage storage(1, 64);
    MemoryTable table = storage.table();
    std::vector<MemoryIdentity> ids;
    for (int k = 0; k < kKeys; ++k) {
        // Half the keys on four homes around the wrap, the rest anywhere.
        const std::uint64_t home = (k % 2 == 0) ? (62 + random() % 4) % 64 : random();
        ids.push_back(Forced(limits[k % 3], k, home));
    }
    struct Expected {
        double value;  // also its last_used: the op that inserted it
        Micros full_at;
    };
    std::map<int, Expected> model;
    int checked = 0;
    int evictions = 0;
    for (int op = 0; op < 20000; ++op) {
        const int k = static_cast<int>(random() % kKeys);
        const int kind = static_cast<int>(random() % 100);
        if (kind < 45) {
            // Below the maximum load (eviction is tested on its own below).
            const bool room = model.count(k) == 1 || table.counters(0).entries < table.max_entries();
            const MemoryInsert at = room ? table.insert(0, ids[k], 0, op) : MemoryInsert{};
            ASSERT_EQ(at.created, room && model.count(k) == 0);
            ASSERT_EQ(at.evicted.full + at.evicted.not_full, 0);
            if (at.created) {
                const Expected expected{static_cast<double>(op), static_cast<Micros>(random() % 20000)};
                table.entry(0, at.slot).state.value = expected.value;
                table.entry(0, at.slot).full_at = expected.full_at;
                ASSERT_EQ(table.entry(0, at.slot).last_used, op);
                model[k] = expected;
            }
        } else if (kind < 80) {
            const int slot = table.find(0, ids[k]);
            ASSERT_EQ(slot >= 0, model.count(k) == 1);
            if (slot >= 0) {
                table.remove(0, slot);
                model.erase(k);
            }
        } else if (kind < 96) {
            const int slot = table.find(0, ids[k]);
            ASSERT_EQ(slot >= 0, model.count(k) == 1);
            if (slot >= 0) {
                ASSERT_EQ(table.entry(0, slot).state.value, model[k].value);
            }
        } else if (kind < 97) {
            // Eviction: every entry full at now, then the oldest others up to want (last_used unique).
            const auto now = static_cast<Micros>(random() % 20000);
            const int want = 1 + static_cast<int>(random() % 12);
            int full = 0;
            std::vector<std::pair<double, int>> others;
            for (auto it = model.begin(); it != model.end();) {
                if (it->second.full_at <= now) {
                    it = model.erase(it);
                    ++full;
                } else {
                    others.emplace_back(it->second.value, it->first);
                    ++it;
                }
            }
            std::sort(others.begin(), others.end());
            const int not_full = std::min(std::max(want - full, 0), static_cast<int>(others.size()));
            for (int i = 0; i < not_full; ++i) model.erase(others[static_cast<std::size_t>(i)].second);
            EvictionCounts counts;
            ASSERT_EQ(table.evict(0, now, want, &counts), full + not_full);
            ASSERT_EQ(counts.full, full);
            ASSERT_EQ(counts.not_full, not_full);
            evictions += full + not_full;
        } else if (kind < 98) {
            const std::string &limit = limits[random() % 3];
            int expected = 0;
            for (auto it = model.begin(); it != model.end();) {
                if (ids[it->first].limit_hash == memory_limit_hash(limit.data(), limit.size())) {
                    it = model.erase(it);
                    ++expected;
                } else {
                    ++it;
                }
            }
            ASSERT_EQ(table.purge_limit(0, memory_limit_hash(limit.data(), limit.size())), expected);
        } else {
            const auto now = static_cast<Micros>(random() % 20000);
            int expected = 0;
            for (auto it = model.begin(); it != model.end();) {
                if (it->second.full_at <= now) {
                    it = model.erase(it);
                    ++expected;
                } else {
                    ++it;
                }
            }
            ASSERT_EQ(table.sweep_full(0, now), expected);
        }
        ASSERT_EQ(table.counters(0).entries, model.size());
        if (op % 10 == 0) {
            CheckPartition(table, 0);
            for (int key = 0; key < kKeys; ++key) ASSERT_EQ(table.find(0, ids[key]) >= 0, model.count(key) == 1);
            ++checked;
        }
    }
    EXPECT_EQ(checked, 2000);
    // Sweeps and purges never count as evictions.
    EXPECT_EQ(table.counters(0).evicted_full + table.counters(0).evicted_not_full,
              static_cast<std::uint64_t>(evictions));
    EXPECT_GT(evictions, 100);
}

TEST(MemoryTable, EvictsFullEntriesFirstThenTheLeastRecentlyUsed) {
    Storage storage(1, 64);
    MemoryTable table = storage.table();
    constexpr Micros kNow = 1000;
    std::vector<MemoryIdentity> ids;
    for (int k = 0; k < 40; ++k) {
        ids.push_back(Ident("l", k));
        const int slot = table.insert(0, ids.back(), 0, 0).slot;
        // Recency is a permutation of 0..39; every fourth key is full at now.
        table.entry(0, slot).last_used = (k * 17) % 40;
        table.entry(0, slot).full_at = (k % 4 == 0) ? kNow - k : kNow + 1;
    }
    EvictionCounts counts;
    EXPECT_EQ(table.evict(0, kNow, 16, &counts), 16);
    EXPECT_EQ(counts.full, 10);
    EXPECT_EQ(counts.not_full, 6);
    EXPECT_EQ(table.counters(0).evicted_full, 10U);
    EXPECT_EQ(table.counters(0).evicted_not_full, 6U);
    EXPECT_EQ(table.counters(0).entries, 24U);
    // Gone: the full ones and the 6 least recently used of the others.
    std::vector<Micros> not_full_recency;
    for (int k = 0; k < 40; ++k)
        if (k % 4 != 0) not_full_recency.push_back((k * 17) % 40);
    std::sort(not_full_recency.begin(), not_full_recency.end());
    const Micros kept_from = not_full_recency[6];
    for (int k = 0; k < 40; ++k) {
        const bool expected_gone = k % 4 == 0 || (k * 17) % 40 < kept_from;
        EXPECT_EQ(table.find(0, ids[k]) < 0, expected_gone) << k;
    }
    CheckPartition(table, 0);

    // When enough are full, nothing else goes, but every full entry does.
    for (int k = 0; k < 24; k += 3) {
        const int slot = table.find(0, ids[(k / 3) * 4 + 1]);
        if (slot >= 0) table.entry(0, slot).full_at = kNow;
    }
    const std::uint32_t before = table.counters(0).entries;
    EvictionCounts second;
    const int dropped = table.evict(0, kNow, 2, &second);
    EXPECT_EQ(second.not_full, 0);
    EXPECT_EQ(second.full, dropped);
    EXPECT_GE(dropped, 2);
    EXPECT_EQ(table.counters(0).entries, before - static_cast<std::uint32_t>(dropped));
    table.for_each(0, [&](int, const MemoryEntry &entry) { EXPECT_GT(entry.full_at, kNow); });
    // The counts accumulate; a null counts pointer is allowed.
    EXPECT_EQ(table.evict(0, kNow, 1, nullptr), 1);
    EXPECT_EQ(table.counters(0).evicted_not_full, 7U);
    // Asking for more than there is empties the partition.
    EXPECT_EQ(table.evict(0, kNow, 1000, nullptr), static_cast<int>(before) - dropped - 1);
    EXPECT_EQ(table.counters(0).entries, 0U);
    EXPECT_EQ(table.evict(0, kNow, 4, nullptr), 0);
}

TEST(MemoryTable, EvictionTiesTakeExactlyWhatIsMissing) {
    Storage storage(1, 64);
    MemoryTable table = storage.table();
    for (int k = 0; k < 50; ++k) {
        const int slot = table.insert(0, Ident("l", k), 0, 500).slot;
        table.entry(0, slot).full_at = 10'000;
        if (k >= 45) table.entry(0, slot).last_used = 100;  // 5 older ones, then 45 equal
    }
    EvictionCounts counts;
    EXPECT_EQ(table.evict(0, 0, 12, &counts), 12);
    EXPECT_EQ(counts.not_full, 12);
    EXPECT_EQ(table.counters(0).entries, 38U);
    int old_left = 0;
    table.for_each(0, [&](int, const MemoryEntry &entry) { old_left += entry.last_used == 100 ? 1 : 0; });
    EXPECT_EQ(old_left, 0);
    CheckPartition(table, 0);
}

// The selection against a sort, with timestamps anywhere in the int64 range (extremes included).
TEST(MemoryTable, EvictionSelectsTheOldestOverAnyRange) {
    std::mt19937_64 random(99);
    for (int round = 0; round < 40; ++round) {
        Storage storage(1, 1024);
        MemoryTable table = storage.table();
        const int count = 100 + static_cast<int>(random() % (table.max_entries() - 100));
        std::vector<Micros> times;
        for (int k = 0; k < count; ++k) {
            Micros t = 0;
            switch (round % 4) {
                case 0:
                    t = static_cast<Micros>(random());
                    break;  // the whole range, negatives too
                case 1:
                    t = 770'000'000'000'000 + static_cast<Micros>(random() % 3'600'000'000ULL);
                    break;
                case 2:
                    t = static_cast<Micros>(random() % 8);
                    break;  // many ties
                default:
                    t = (k % 2 == 0) ? std::numeric_limits<Micros>::max() - static_cast<Micros>(random() % 3)
                                     : std::numeric_limits<Micros>::min() + static_cast<Micros>(random() % 3);
            }
            const int slot = table.insert(0, Ident("l", k), 0, 0).slot;
            table.entry(0, slot).last_used = t;
            table.entry(0, slot).full_at = std::numeric_limits<Micros>::max();
            times.push_back(t);
        }
        const int want = 1 + static_cast<int>(random() % static_cast<std::uint64_t>(count));
        EvictionCounts counts;
        ASSERT_EQ(table.evict(0, 0, want, &counts), want);
        ASSERT_EQ(counts.not_full, want);
        std::sort(times.begin(), times.end());
        const Micros threshold = times[static_cast<std::size_t>(want - 1)];
        // Kept: everything newer than the want-th oldest, and exactly the right number of its ties.
        std::vector<Micros> kept;
        table.for_each(0, [&](int, const MemoryEntry &entry) { kept.push_back(entry.last_used); });
        std::sort(kept.begin(), kept.end());
        ASSERT_EQ(kept, std::vector<Micros>(times.begin() + want, times.end())) << "round " << round;
        for (const Micros t : kept) ASSERT_GE(t, threshold);
        CheckPartition(table, 0);
    }
}

// Inserting beyond the maximum load evicts a batch of the least recently used, never more; the load
// bound holds however many keys arrive.
TEST(MemoryTable, InsertAtMaximumLoadEvictsABatch) {
    Storage storage(1, 64);
    MemoryTable table = storage.table();
    ASSERT_EQ(table.max_entries(), 56U);
    ASSERT_EQ(table.eviction_batch(), 4);
    for (int k = 0; k < 56; ++k) {
        const MemoryInsert at = table.insert(0, Ident("l", k), 0, k);
        table.entry(0, at.slot).full_at = 1'000'000;
        ASSERT_EQ(at.evicted.not_full, 0);
    }
    const MemoryInsert at = table.insert(0, Ident("l", 56), 0, 56);
    table.entry(0, at.slot).full_at = 1'000'000;
    EXPECT_TRUE(at.created);
    EXPECT_EQ(at.evicted.full, 0);
    EXPECT_EQ(at.evicted.not_full, 4);
    EXPECT_EQ(table.counters(0).entries, 53U);
    for (int k = 0; k < 4; ++k) EXPECT_EQ(table.find(0, Ident("l", k)), -1) << k;
    for (int k = 4; k <= 56; ++k) EXPECT_GE(table.find(0, Ident("l", k)), 0) << k;
    // Full entries go first, and all of them, when the batch is taken.
    int slot = table.find(0, Ident("l", 30));
    table.entry(0, slot).full_at = 0;
    slot = table.find(0, Ident("l", 31));
    table.entry(0, slot).full_at = 0;
    for (int k = 57; k < 60; ++k) table.entry(0, table.insert(0, Ident("l", k), 0, k).slot).full_at = 1'000'000;
    const MemoryInsert next = table.insert(0, Ident("l", 60), 0, 60);
    EXPECT_EQ(next.evicted.full, 2);
    EXPECT_EQ(next.evicted.not_full, 2);
    EXPECT_EQ(table.find(0, Ident("l", 30)), -1);
    EXPECT_EQ(table.find(0, Ident("l", 4)), -1);
    EXPECT_EQ(table.find(0, Ident("l", 5)), -1);
    EXPECT_GE(table.find(0, Ident("l", 6)), 0);
    // A flood of new keys: the bound holds and every eviction is a batch.
    for (int k = 1000; k < 6000; ++k) {
        const MemoryInsert flood = table.insert(0, Ident("l", k), 0, k);
        table.entry(0, flood.slot).full_at = 1'000'000;
        const int evicted = flood.evicted.full + flood.evicted.not_full;
        ASSERT_TRUE(evicted == 0 || evicted == 4) << evicted;
        ASSERT_LE(table.counters(0).entries, table.max_entries());
    }
    CheckPartition(table, 0);
    // The most recent keys are the ones kept.
    for (int k = 6000 - 53; k < 6000; ++k) EXPECT_GE(table.find(0, Ident("l", k)), 0) << k;
}

TEST(MemoryTable, PurgeRemovesExactlyOneLimit) {
    Storage storage(4, 128);  // room for the 240 entries: no eviction
    MemoryTable table = storage.table();
    for (int k = 0; k < 120; ++k) {
        for (const char *limit : {"keep", "drop"}) {
            const MemoryIdentity id = Ident(limit, k);
            ASSERT_TRUE(table.insert(table.partition_of(id.hash), id, 0, 0).created);
        }
    }
    int purged = 0;
    const std::uint64_t drop = memory_limit_hash("drop", 4);
    for (std::uint32_t p = 0; p < 4; ++p) {
        purged += table.purge_limit(p, drop);
        CheckPartition(table, p);
    }
    EXPECT_EQ(purged, 120);
    for (int k = 0; k < 120; ++k) {
        const MemoryIdentity kept = Ident("keep", k);
        const MemoryIdentity dropped = Ident("drop", k);
        EXPECT_GE(table.find(table.partition_of(kept.hash), kept), 0) << k;
        EXPECT_EQ(table.find(table.partition_of(dropped.hash), dropped), -1) << k;
    }
    EXPECT_EQ(table.purge_limit(0, drop), 0);
}

TEST(MemoryTable, SweepRemovesFullEntriesOnly) {
    Storage storage(1, 256);
    MemoryTable table = storage.table();
    for (int k = 0; k < 200; ++k) table.entry(0, table.insert(0, Ident("l", k), 0, 0).slot).full_at = k;
    // Full at 99: the keys full at 0..99. A new entry without state (MEMORY_NO_STATE) is full too.
    const int fresh = table.insert(0, Ident("l", 1000), 0, 0).slot;
    EXPECT_EQ(table.entry(0, fresh).full_at, MEMORY_NO_STATE);
    EXPECT_EQ(table.sweep_full(0, 99), 101);
    for (int k = 0; k < 200; ++k) EXPECT_EQ(table.find(0, Ident("l", k)) >= 0, k >= 100) << k;
    EXPECT_EQ(table.counters(0).evicted_full, 0U);
    CheckPartition(table, 0);
}

TEST(MemoryTable, SweepOfOneLimit) {
    Storage storage(1, 256);
    MemoryTable table = storage.table();
    for (int k = 0; k < 100; ++k)
        for (const char *limit : {"a", "b"}) table.entry(0, table.insert(0, Ident(limit, k), 0, 0).slot).full_at = k;
    EXPECT_EQ(table.sweep_full(0, 49, memory_limit_hash("a", 1)), 50);
    for (int k = 0; k < 100; ++k) {
        EXPECT_EQ(table.find(0, Ident("a", k)) >= 0, k >= 50) << k;
        EXPECT_GE(table.find(0, Ident("b", k)), 0) << k;
    }
    EXPECT_EQ(table.counters(0).entries, 150U);
    CheckPartition(table, 0);
}

// Saving every entry (for_each) and loading them into a table of another shape and seed (restore).
TEST(MemoryTable, SaveAndReloadRoundTrip) {
    constexpr Micros kNow = 5000;
    Storage first_storage(4, 64, 1);
    MemoryTable first = first_storage.table();
    std::map<std::string, MemoryEntry> written;
    for (int k = 0; k < 150; ++k) {
        const MemoryIdentity id = Ident(k % 2 == 0 ? "even" : "odd", k, 1);
        const std::uint32_t p = first.partition_of(id.hash);
        MemoryEntry &entry = first.entry(p, first.insert(p, id, static_cast<std::uint32_t>(k % 5), k).slot);
        entry.state = {k * 1.5, kNow - k};
        entry.full_at = (k % 10 == 0) ? kNow - 1 : kNow + k;  // one in ten already full at load time
        written[std::string(reinterpret_cast<const char *>(id.bytes), id.length)] = entry;
    }
    std::vector<MemoryEntry> file;
    for (std::uint32_t p = 0; p < first.partitions(); ++p)
        first.for_each(p, [&](int slot, const MemoryEntry &entry) {
            EXPECT_EQ(&first.entry(p, slot), &entry);
            file.push_back(entry);
        });
    ASSERT_EQ(file.size(), 150U);
    // A corrupted record is refused.
    MemoryEntry corrupt = file.front();
    corrupt.identity.length = 200;
    file.push_back(corrupt);

    Storage second_storage(8, 128, 2);
    MemoryTable second = second_storage.table();
    int restored = 0;
    int refused = 0;
    for (MemoryEntry entry : file) {
        memory_identity_rehash(&entry.identity, second.seed());
        const MemoryInsert at = second.restore(second.partition_of(entry.identity.hash), entry, kNow);
        (at.slot >= 0 ? restored : refused) += 1;
    }
    EXPECT_EQ(restored, 135);
    EXPECT_EQ(refused, 16);
    for (int k = 0; k < 150; ++k) {
        const MemoryIdentity id = Ident(k % 2 == 0 ? "even" : "odd", k, 2);
        const std::uint32_t p = second.partition_of(id.hash);
        const int slot = second.find(p, id);
        if (k % 10 == 0) {
            EXPECT_EQ(slot, -1) << k;
            continue;
        }
        ASSERT_GE(slot, 0) << k;
        const MemoryEntry &saved = written[std::string(reinterpret_cast<const char *>(id.bytes), id.length)];
        const MemoryEntry &loaded = second.entry(p, slot);
        EXPECT_EQ(loaded.state.value, saved.state.value);
        EXPECT_EQ(loaded.state.ts, saved.state.ts);
        EXPECT_EQ(loaded.last_used, saved.last_used);
        EXPECT_EQ(loaded.full_at, saved.full_at);
        EXPECT_EQ(loaded.definition, saved.definition);
        EXPECT_EQ(loaded.identity.limit_hash, saved.identity.limit_hash);
    }
    for (std::uint32_t p = 0; p < second.partitions(); ++p) CheckPartition(second, p);
}

// The algorithms' values are part of the memory-mode fingerprint (memory_definition): appended, never
// renumbered (limit.hpp).
TEST(MemoryTable, AlgorithmValuesAreStable) {
    EXPECT_EQ(static_cast<int>(Algorithm::token_bucket), 0);
    EXPECT_EQ(static_cast<int>(Algorithm::fixed_window), 1);
    EXPECT_EQ(static_cast<int>(Algorithm::gcra), 2);
    EXPECT_EQ(static_cast<int>(Algorithm::sliding_window), 3);
}

// The fingerprint's shape changes with the algorithm, the number of shards and the epoch, and with
// nothing else; its numbers part with the rate, period, capacity, start and calendar.
TEST(MemoryTable, DefinitionFingerprint) {
    std::set<std::uint64_t> seen;
    for (const Algorithm algorithm :
         {Algorithm::token_bucket, Algorithm::fixed_window, Algorithm::gcra, Algorithm::sliding_window}) {
        for (const int shards : {1, 2, 16, MAX_SHARDS}) {
            Limit limit;
            limit.algorithm = algorithm;
            limit.shards = shards;
            limit.rate = 5;
            limit.capacity = 7;
            limit.period = 1000;
            const std::uint64_t fingerprint = memory_definition(limit);
            EXPECT_TRUE(seen.insert(memory_shape(fingerprint)).second) << shards;
            EXPECT_NE(fingerprint & ~MEMORY_SHAPE_BITS, MEMORY_NUMBERS_UNKNOWN);
            // Other numbers: the same shape, another fingerprint.
            Limit others[4] = {limit, limit, limit, limit};
            others[0].rate = 6;
            others[1].period = 2000;
            others[2].capacity = 8;
            others[3].has_start = true;
            others[3].start = 17;
            for (const Limit &other : others) {
                EXPECT_EQ(memory_shape(memory_definition(other)), memory_shape(fingerprint));
                EXPECT_NE(memory_definition(other), fingerprint);
            }
            // What does not give a state its meaning leaves the fingerprint alone.
            Limit same = limit;
            same.max_reserved = 99;
            same.jitter = 5;
            same.shadow = true;
            same.storage = ::pg_ratelimit::core::Storage::unlogged;
            EXPECT_EQ(memory_definition(same), fingerprint);
            // Another epoch (a limit dropped and defined again): another shape.
            limit.epoch = 12345;
            EXPECT_NE(memory_shape(memory_definition(limit)), memory_shape(fingerprint));
        }
    }
}

// A fingerprint saved by release 0.1.0 (algorithm | shards << 8 | epoch hash << 24) reads as the same
// shape with unknown numbers.
TEST(MemoryTable, DefinitionFingerprintOfRelease01) {
    for (const std::uint64_t epoch : {std::uint64_t{0}, std::uint64_t{12345}, ~std::uint64_t{0}}) {
        for (const int shards : {1, 4, MAX_SHARDS}) {
            Limit limit;
            limit.algorithm = Algorithm::gcra;
            limit.shards = shards;
            limit.epoch = epoch;
            unsigned char bytes[sizeof(epoch)];
            for (std::size_t i = 0; i < sizeof(epoch); ++i) bytes[i] = static_cast<unsigned char>(epoch >> (8 * i));
            const std::uint64_t saved = static_cast<std::uint64_t>(Algorithm::gcra) |
                                        (static_cast<std::uint64_t>(shards) << 8) |
                                        (memory_hash_bytes(bytes, sizeof(bytes), 0) << 24);
            const std::uint64_t read = memory_definition_from_0_1(saved);
            EXPECT_EQ(memory_shape(read), memory_shape(memory_definition(limit)));
            EXPECT_EQ(read & ~MEMORY_SHAPE_BITS, MEMORY_NUMBERS_UNKNOWN);
        }
    }
}

}  // namespace
}  // namespace pg_ratelimit::core
