// The shared memory of storage => 'memory': sizing, creation, the file it is saved to at a clean
// shutdown and loaded from at start (as pg_stat_statements does with its own), key resets, cleanup,
// forgetting a dropped or redefined limit at commit, and the figures rate_limit_storage shows.
#include "state/memory_state.hpp"

#include <sys/stat.h>
#include <unistd.h>
#include <algorithm>
#include <cmath>

#include "call_context.hpp"
#include "catalog/limit_cache.hpp"
#include "clock.hpp"
#include "core/algorithms.hpp"
#include "core/memory_table.hpp"
#include "core/shards.hpp"
#include "cpp_boundary.hpp"
#include "state/memory_store.hpp"
#include "state/state_access.hpp"

namespace pg_ratelimit {
namespace {

// The file a clean shutdown writes, in the data directory; removed once loaded, so that a crash later
// never brings back what it held.
constexpr const char *SAVE_FILE = "pg_stat/pg_ratelimit_memory.state";
constexpr const char *SAVE_FILE_TEMP = "pg_stat/pg_ratelimit_memory.state.tmp";
// "RLM2" (release 0.2.0: identity.database set); a new layout of MemoryEntry needs a new one. A file of
// release 0.1.0 ("RLM1": the same layout, the database not set) is still read (load_file).
constexpr uint32 SAVE_FILE_MAGIC = 0x524c4d32;
constexpr uint32 SAVE_FILE_MAGIC_0_1 = 0x524c4d31;

int memory_keys = 100000;  // pg_ratelimit.memory_keys

enum class Eviction { lru, none };
const config_enum_entry EVICTIONS[] = {
    {"lru", static_cast<int>(Eviction::lru), false},
    {"none", static_cast<int>(Eviction::none), false},
    {nullptr, 0, false},
};
int memory_eviction = static_cast<int>(Eviction::lru);  // pg_ratelimit.memory_eviction
bool preloaded = false;
object_access_hook_type previous_object_access_hook = nullptr;
shmem_request_hook_type previous_shmem_request_hook = nullptr;
shmem_startup_hook_type previous_shmem_startup_hook = nullptr;

// At the start of the shared memory: what every backend needs to find the rest.
// The changes of memory limits committing now (rescales, at most MAX_CHANGES at once): set at PRE_COMMIT,
// before the new definition becomes visible, and cleared once its entries are carried over. A call that
// meets an entry of other numbers waits for them, so that no call decides under one definition on entries
// of the other (access_memory.cpp, decide_key.cpp).
constexpr int MAX_CHANGES = 64;
constexpr uint64 ANY_LIMIT = 0;  // a marker for every limit (memory_limit_hash is never 0 in practice)
struct ChangeMarkers {
    slock_t mutex;
    ConditionVariable cleared;  // broadcast when markers go
    int count;
    uint64 limit_hash[MAX_CHANGES];  // scoped_limit_hash of the limit
    int owner[MAX_CHANGES];          // the committing backend's pid
};

struct SharedHeader {
    int tranche;  // of every lock below
    uint32 partitions;
    uint32 slots;
    ChangeMarkers changes;
};

SharedHeader *shared_header = nullptr;  // this process's view, from attach()

MemoryStore store{core::MemoryTable(nullptr), nullptr, nullptr};
bool store_attached = false;

// Partitions and slots for pg_ratelimit.memory_keys: about 1,000 keys a partition, and slots enough
// that the keys fit at the table's 7/8 load.
void table_shape(uint32 *partitions, uint32 *slots) {
    const double keys = memory_keys;
    uint32 p = 1;
    while (p < core::MEMORY_TABLE_MAX_PARTITIONS && p * 1024.0 < keys) p <<= 1;
    uint32 s = core::MEMORY_TABLE_MIN_SLOTS;
    // A partition holds 7/8 of its slots (core::MemoryTable::max_entries).
    while (s < core::MEMORY_TABLE_MAX_SLOTS && static_cast<double>(s) * 7.0 / 8.0 * p < keys) s <<= 1;
    *partitions = p;
    *slots = s;
}

Size locks_offset() { return MAXALIGN(sizeof(SharedHeader)); }
Size slot_locks_offset(uint32 partitions) { return locks_offset() + mul_size(partitions, sizeof(LWLockPadded)); }
Size table_offset(uint32 partitions, uint32 slots) {
    // The table's own layout keeps each partition on its own cache lines from a 64-byte boundary.
    return TYPEALIGN(64, slot_locks_offset(partitions) + mul_size(mul_size(partitions, slots), sizeof(LWLock)));
}
Size shared_size() {
    uint32 partitions = 0;
    uint32 slots = 0;
    table_shape(&partitions, &slots);
    return add_size(add_size(table_offset(partitions, slots), core::memory_table_bytes(partitions, slots)), 64);
}

void shmem_request() {
    if (previous_shmem_request_hook != nullptr) previous_shmem_request_hook();
    RequestAddinShmemSpace(shared_size());
}

void save_file(int code, Datum);
void load_file();

void shmem_startup() {
    if (previous_shmem_startup_hook != nullptr) previous_shmem_startup_hook();
    LWLockAcquire(AddinShmemInitLock, LW_EXCLUSIVE);
    bool found = false;
    auto *base = static_cast<char *>(ShmemInitStruct("pg_ratelimit memory state", shared_size(), &found));
    auto *header = reinterpret_cast<SharedHeader *>(base);
    if (!found) {
        table_shape(&header->partitions, &header->slots);
        header->tranche = LWLockNewTrancheId();
        SpinLockInit(&header->changes.mutex);
        ConditionVariableInit(&header->changes.cleared);
        header->changes.count = 0;
        auto *partition_locks = reinterpret_cast<LWLockPadded *>(base + locks_offset());
        for (uint32 i = 0; i < header->partitions; ++i) LWLockInitialize(&partition_locks[i].lock, header->tranche);
        auto *slot_locks = reinterpret_cast<LWLock *>(base + slot_locks_offset(header->partitions));
        const uint64 slot_count = static_cast<uint64>(header->partitions) * header->slots;
        for (uint64 i = 0; i < slot_count; ++i) LWLockInitialize(&slot_locks[i], header->tranche);
        uint64 seed = 0;
        if (!pg_strong_random(&seed, sizeof(seed))) seed = static_cast<uint64>(GetCurrentTimestamp());
        void *table = base + table_offset(header->partitions, header->slots);
        if (!core::memory_table_init(table, header->partitions, header->slots, seed))
            elog(FATAL, "pg_ratelimit: could not set up the memory state table");
    }
    LWLockRelease(AddinShmemInitLock);
    store_attached = false;  // each process attaches on first use (memory_store)
    // The postmaster saves the table when it exits cleanly, and loads it once, when it creates it.
    if (!IsUnderPostmaster) {
        on_shmem_exit(save_file, 0);
        if (!found) load_file();
    }
}

void attach() {
    bool found = false;
    auto *base = static_cast<char *>(ShmemInitStruct("pg_ratelimit memory state", shared_size(), &found));
    if (!found) elog(ERROR, "pg_ratelimit: the memory state is missing from shared memory");
    auto *header = reinterpret_cast<SharedHeader *>(base);
    shared_header = header;
    LWLockRegisterTranche(header->tranche, "pg_ratelimit");
    store.partition_locks = reinterpret_cast<LWLockPadded *>(base + locks_offset());
    store.slot_locks = reinterpret_cast<LWLock *>(base + slot_locks_offset(header->partitions));
    store.table = core::MemoryTable(base + table_offset(header->partitions, header->slots));
    if (!store.table.valid()) elog(ERROR, "pg_ratelimit: the memory state table is damaged");
    store_attached = true;
}

// Whether the server shut down cleanly (at exit), or was last shut down cleanly (at start): the control
// file says so from the shutdown checkpoint until the startup process begins recovery. An immediate
// shutdown runs the postmaster's exit callbacks with code 0 too, without that checkpoint.
bool shut_down_cleanly() {
    bool crc_ok = false;
    ControlFileData *control = get_controlfile(DataDir, &crc_ok);
    const bool clean = crc_ok && (control->state == DB_SHUTDOWNED || control->state == DB_SHUTDOWNED_IN_RECOVERY);
    pfree(control);
    return clean;
}

// The saved entries: the magic, the entry size, then the entries, then their count (a torn file is
// never taken for a complete one).
void save_file(int code, Datum) {
    // A crash, a failed start or an immediate shutdown (no shutdown checkpoint): nothing is saved.
    if (code != 0 || !preloaded || !shut_down_cleanly()) return;
    if (!store_attached) attach();
    FILE *file = AllocateFile(SAVE_FILE_TEMP, PG_BINARY_W);
    if (file == nullptr) {
        ereport(LOG, (errcode_for_file_access(), errmsg("pg_ratelimit: could not write \"%s\": %m", SAVE_FILE_TEMP)));
        return;
    }
    const uint32 head[2] = {SAVE_FILE_MAGIC, static_cast<uint32>(sizeof(core::MemoryEntry))};
    bool ok = fwrite(head, sizeof(head), 1, file) == 1;
    uint64 count = 0;
    const core::MemoryTable &table = store.table;
    // Every other process has exited: no locks needed (nor possible in the postmaster).
    for (uint32 partition = 0; ok && partition < table.partitions(); ++partition)
        table.for_each(partition, [&](int, const core::MemoryEntry &entry) {
            if (ok && entry.full_at != core::MEMORY_NO_STATE) {
                ok = fwrite(&entry, sizeof(entry), 1, file) == 1;
                ++count;
            }
        });
    ok = ok && fwrite(&count, sizeof(count), 1, file) == 1;
    if (FreeFile(file) != 0) ok = false;
    if (!ok) {
        ereport(LOG, (errcode_for_file_access(), errmsg("pg_ratelimit: could not write \"%s\": %m", SAVE_FILE_TEMP)));
        unlink(SAVE_FILE_TEMP);
        return;
    }
    if (durable_rename(SAVE_FILE_TEMP, SAVE_FILE, LOG) != 0) unlink(SAVE_FILE_TEMP);
}

// The database an identity's encoding names, for entries saved by release 0.1.0, which did not set it: the
// limit part of an inline encoding starts with the database's OID (scoped_name); a digest does not tell (0).
Oid database_of(const core::MemoryIdentity &identity) {
    if (identity.digest || !core::memory_identity_valid(identity)) return InvalidOid;
    // The encoding: three varints (each ends with a byte below 0x80), the limit, the key.
    size_t at = 0;
    for (int ended = 0; ended < 3; ++at)
        if (at >= identity.length)
            return InvalidOid;
        else if ((identity.bytes[at] & 0x80) == 0)
            ++ended;
    if (at + sizeof(Oid) > identity.length) return InvalidOid;
    Oid database = InvalidOid;
    memcpy(&database, identity.bytes + at, sizeof(database));
    return database;
}

// Whether a database still exists, from the postmaster, which cannot read pg_database: its directory in
// its default tablespace (base/OID, or pg_tblspc/*/<version>/OID) is there.
bool database_exists(Oid database) {
    char path[MAXPGPATH];
    struct stat status;
    snprintf(path, sizeof(path), "base/%u", database);
    if (stat(path, &status) == 0) return true;
    DIR *spaces = AllocateDir("pg_tblspc");
    if (spaces == nullptr) return false;
    bool found = false;
    struct dirent *space = nullptr;
    while (!found && (space = ReadDir(spaces, "pg_tblspc")) != nullptr) {
        if (space->d_name[0] == '.') continue;
        snprintf(path, sizeof(path), "pg_tblspc/%s/%s/%u", space->d_name, TABLESPACE_VERSION_DIRECTORY, database);
        found = stat(path, &status) == 0;
    }
    FreeDir(spaces);
    return found;
}

void load_file() {
    if (!shut_down_cleanly()) {
        // After a crash (or an immediate shutdown) every key starts at full capacity.
        if (unlink(SAVE_FILE) == 0)
            ereport(LOG, (errmsg("pg_ratelimit: the memory state saved at the last stop was discarded"),
                          errdetail("The server was not shut down cleanly.")));
        return;
    }
    // Not a file the server wrote (a directory, a link: f84): in the way of every save, so removed.
    struct stat status;
    if (lstat(SAVE_FILE, &status) == 0 && !S_ISREG(status.st_mode)) {
        const bool removed = (S_ISDIR(status.st_mode) ? rmdir(SAVE_FILE) : unlink(SAVE_FILE)) == 0;
        ereport(LOG, (errmsg("pg_ratelimit: \"%s\" is not a regular file", SAVE_FILE),
                      removed ? errdetail("It was removed; every key starts at full capacity.")
                              : errdetail("It could not be removed (%m): the memory state cannot be saved at shutdown "
                                          "until it is.")));
        return;
    }
    FILE *file = AllocateFile(SAVE_FILE, PG_BINARY_R);
    if (file == nullptr) {
        // An unreadable file (another owner, no permission) is removed: left there, it would make every
        // later save fail (durable_rename opens the file it replaces), and each clean restart lose the state.
        if (errno != ENOENT) {
            ereport(LOG, (errcode_for_file_access(), errmsg("pg_ratelimit: could not read \"%s\": %m", SAVE_FILE),
                          errdetail("The file is removed; every key starts at full capacity.")));
            unlink(SAVE_FILE);
        }
        return;
    }
    attach();
    uint32 head[2] = {0, 0};
    uint64 loaded = 0;
    uint64 dropped = 0;  // entries of databases that no longer exist
    bool ok = fread(head, sizeof(head), 1, file) == 1 &&
              (head[0] == SAVE_FILE_MAGIC || head[0] == SAVE_FILE_MAGIC_0_1) && head[1] == sizeof(core::MemoryEntry);
    const bool release_0_1 = head[0] == SAVE_FILE_MAGIC_0_1;
    const core::Micros now = GetCurrentTimestamp();
    core::MemoryEntry entry;
    // Entries until the trailing count, which must match.
    while (ok) {
        const size_t got = fread(&entry, 1, sizeof(entry), file);
        if (got == sizeof(uint64) && feof(file)) {
            uint64 count = 0;
            memcpy(&count, &entry, sizeof(count));
            ok = count == loaded;
            break;
        }
        if (got != sizeof(entry)) {
            ok = false;
            break;
        }
        ++loaded;
        // A file only the server's OS user can write; still, a number no decision could store is skipped.
        // (Any finite value can be stored: GCRA keeps in it the time owed beyond PostgreSQL's last instant.)
        if (!std::isfinite(entry.state.value)) continue;
        if (release_0_1) {
            entry.identity.database = database_of(entry.identity);
            entry.definition = core::memory_definition_from_0_1(entry.definition);
        }
        // A database dropped while the entry was saved, or before (release 0.1.0 kept its entries): gone.
        if (entry.identity.database != InvalidOid && !database_exists(entry.identity.database)) {
            ++dropped;
            continue;
        }
        core::memory_identity_rehash(&entry.identity, store.table.seed());
        const uint32 partition = store.table.partition_of(entry.identity.hash);
        (void)store.table.restore(partition, entry, now);
    }
    FreeFile(file);
    if (!ok) {
        // Whatever came before the damage is kept: each entry was checked on its own.
        ereport(LOG, (errmsg("pg_ratelimit: \"%s\" is incomplete or of another version", SAVE_FILE)));
    }
    if (dropped > 0)
        ereport(LOG, (errmsg("pg_ratelimit: " UINT64_FORMAT " saved memory entries of dropped databases were "
                             "not loaded",
                             dropped)));
    if (release_0_1)
        ereport(LOG, (errmsg("pg_ratelimit: \"%s\" was written by release 0.1.0; its entries were loaded", SAVE_FILE)));
    unlink(SAVE_FILE);
}

// Limits to forget, or whose keys to rescale, when the transaction commits, with the subtransaction level
// that asked (an aborted subtransaction's requests are dropped), in the order asked. Kept in
// TopMemoryContext, emptied at every transaction end.
// One key's shard carried between limits of its own (per-key tiers), found by its identity.
struct KeyRescale {
    core::MemoryIdentity identity;
    uint64 definition;     // core::memory_definition its entry must have been made under
    uint64 to_definition;  // and the one it is under once carried over (another algorithm: GCRA <-> token bucket)
    core::Limit from;      // shard limits
    core::Limit to;
    core::Micros from_origin;
    core::Micros to_origin;
};

struct PendingForget {
    char name[MAX_LIMIT_NAME_BYTES + 1];
    int level;
    bool rescale;  // else forget
    bool refresh;  // with rescale: numbers kept, only when each key is full again recomputed (refresh_limit)
    Oid database;  // not InvalidOid: every entry of this database goes (forget_database), name unused
    core::Limit from;
    core::Limit to;
    core::Rescale rule;
    // Per-key tiers: keys carried between limits of their own, sorted by identity.hash (TopMemoryContext);
    // with whole_limit false, only these are rescaled.
    bool whole_limit;
    KeyRescale *keys;
    int key_count;
};
PendingForget *pending = nullptr;
int pending_count = 0;
int pending_capacity = 0;

// The name a limit's entries are kept under: the database's OID, then the limit's name. Shared memory
// is the server's, and each database has limits (and keys) of its own.
struct ScopedName {
    char bytes[sizeof(Oid) + MAX_LIMIT_NAME_BYTES];
    size_t length;
};

ScopedName scoped_name(const char *name, size_t length) {
    ScopedName scoped;
    const Oid database = MyDatabaseId;
    memcpy(scoped.bytes, &database, sizeof(database));
    length = Min(length, static_cast<size_t>(MAX_LIMIT_NAME_BYTES));
    memcpy(scoped.bytes + sizeof(database), name, length);
    scoped.length = sizeof(database) + length;
    return scoped;
}

uint64 scoped_limit_hash(const char *name, size_t length) {
    const ScopedName scoped = scoped_name(name, length);
    return core::memory_limit_hash(scoped.bytes, scoped.length);
}

// Runs `step(table, partition)` on every partition of the table in turn, each under its exclusive lock
// (never all at once: other backends keep deciding keys of the partitions not being walked).
template <typename Step>
void for_each_partition(Step step) {
    const MemoryStore &memory = memory_store();
    auto &table = const_cast<core::MemoryTable &>(memory.table);
    for (uint32 partition = 0; partition < table.partitions(); ++partition) {
        LWLockAcquire(&memory.partition_locks[partition].lock, LW_EXCLUSIVE);
        step(table, partition);
        LWLockRelease(&memory.partition_locks[partition].lock);
    }
}

// Runs `visit(table, partition, slot, entry)` on every entry of the limit whose scoped hash is `limit_hash`.
template <typename Visit>
void for_each_entry_of_limit(uint64 limit_hash, Visit visit) {
    for_each_partition([&](core::MemoryTable &table, uint32 partition) {
        for (uint32 slot = 0; slot < table.slots(); ++slot) {
            core::MemoryEntry &entry = table.entry(partition, static_cast<int>(slot));
            if (entry.identity.length != 0 && entry.identity.limit_hash == limit_hash)
                visit(table, partition, static_cast<int>(slot), entry);
        }
    });
}

void forget_database(Oid database) {
    for_each_partition(
        [database](core::MemoryTable &table, uint32 partition) { (void)table.purge_database(partition, database); });
}

void forget_limit(const char *name) {
    const uint64 limit_hash = scoped_limit_hash(name, strlen(name));
    for_each_partition(
        [limit_hash](core::MemoryTable &table, uint32 partition) { (void)table.purge_limit(partition, limit_hash); });
}

// Carries the keys of a limit redefined with the same algorithm, shards and epoch over to the new
// definition (core/rescale.hpp), in place. A key whose grid depends on the key itself (a fixed or sliding
// window without start) and whose identity is a digest (a long key, memory_identity.hpp) cannot be read
// back: it keeps its numbers as they are.
// The key-specific carry-over of an entry, if the change has one for it (binary search by hash).
const KeyRescale *key_rescale_of(const PendingForget &change, const core::MemoryIdentity &identity) {
    int low = 0;
    int high = change.key_count - 1;
    while (low <= high) {
        const int middle = low + (high - low) / 2;
        if (change.keys[middle].identity.hash < identity.hash) {
            low = middle + 1;
        } else if (change.keys[middle].identity.hash > identity.hash) {
            high = middle - 1;
        } else {
            // Equal hashes: the run around `middle`.
            int first = middle;
            while (first > 0 && change.keys[first - 1].identity.hash == identity.hash) --first;
            for (int i = first; i < change.key_count && change.keys[i].identity.hash == identity.hash; ++i)
                if (core::memory_identity_equal(change.keys[i].identity, identity)) return &change.keys[i];
            return nullptr;
        }
    }
    return nullptr;
}

// When an entry holding `state` under `limit` (shard limit) is full again, at the latest, for an entry whose
// window grid cannot be known (a fixed or sliding window keyed per key whose identity is a digest): every
// window to come adds at least the rate, so a fixed window is full after the windows its shortfall needs
// plus the one in progress, and a sliding window after two periods. Never earlier than `full_at` was: a
// later instant only keeps the entry longer, an earlier one would let cleanup or eviction drop a key that
// still owes units.
core::Micros full_again_at_the_latest(const core::Limit &limit, const core::State &state, core::Micros now,
                                      core::Micros full_at) {
    double windows = 2;
    if (limit.algorithm == core::Algorithm::fixed_window)
        windows = std::ceil(std::max(0.0, limit.capacity - state.value) / limit.rate) + 1;
    const double span = std::min(windows * static_cast<double>(limit.period), static_cast<double>(core::MAX_DURATION));
    return std::max(full_at, now + static_cast<core::Micros>(span));
}

// Carries one entry between a key's own limits (or removes it: reset). Under the partition's exclusive lock.
void rescale_entry(core::MemoryTable &table, uint32 partition, int slot, const KeyRescale &key, core::Rescale rule,
                   core::Micros now) {
    core::MemoryEntry &entry = table.entry(partition, slot);
    if (entry.definition != key.definition || entry.full_at == core::MEMORY_NO_STATE || entry.full_at <= now) return;
    if (rule == core::Rescale::reset) {
        table.remove(partition, slot);
        return;
    }
    entry.state = core::rescaled_state(key.from, key.to, entry.state, now, key.from_origin, key.to_origin, rule);
    entry.full_at = now + std::max<core::Micros>(1, core::time_to_full(key.to, &entry.state, now, key.to_origin));
    entry.definition = key.to_definition;
}

// Only the keys of the change (an override set, changed or dropped).
void rescale_keys(const PendingForget &change) {
    const core::Micros now = clock_now();
    const MemoryStore &memory = memory_store();
    auto &table = const_cast<core::MemoryTable &>(memory.table);
    for (int i = 0; i < change.key_count; ++i) {
        const KeyRescale &key = change.keys[i];
        const uint32 partition = table.partition_of(key.identity.hash);
        LWLockAcquire(&memory.partition_locks[partition].lock, LW_EXCLUSIVE);
        const int slot = table.find(partition, key.identity);
        if (slot >= 0) rescale_entry(table, partition, slot, key, change.rule, now);
        LWLockRelease(&memory.partition_locks[partition].lock);
    }
}

void rescale_limit(const PendingForget &change) {
    const uint64 limit_hash = scoped_limit_hash(change.name, strlen(change.name));
    const core::Limit from = core::shard_limit(change.from);
    const core::Limit to = core::shard_limit(change.to);
    const uint64 definition = core::memory_definition(change.from);
    const uint64 to_definition = core::memory_definition(change.to);
    const bool keyed = (core::uses_window_grid(change.from.algorithm) && !change.from.has_start) ||
                       (core::uses_window_grid(change.to.algorithm) && !change.to.has_start);
    const core::Micros now = clock_now();
    for_each_entry_of_limit(
        limit_hash, [&](core::MemoryTable &table, uint32 partition, int slot, core::MemoryEntry &entry) {
            if (change.key_count > 0) {  // a key with an override carries over between its own limits
                const KeyRescale *key = key_rescale_of(change, entry.identity);
                if (key != nullptr) {
                    rescale_entry(table, partition, slot, *key, change.rule, now);
                    return;
                }
            }
            // An entry of the same shape whose numbers are unknown (saved by release 0.1.0) was made under
            // the definition in force then: `from`.
            const bool from_entry = entry.definition == definition ||
                                    (core::memory_shape(entry.definition) == core::memory_shape(definition) &&
                                     (entry.definition & ~core::MEMORY_SHAPE_BITS) == core::MEMORY_NUMBERS_UNKNOWN);
            if (!from_entry || entry.full_at == core::MEMORY_NO_STATE || entry.full_at <= now) return;
            const unsigned char *key = nullptr;
            size_t key_len = 0;
            if (keyed && !core::memory_identity_key(entry.identity, &key, &key_len)) {
                // Its grid is unknown: the numbers stay as they are (README), and it is kept at least until
                // it is surely full under the new definition.
                entry.full_at = full_again_at_the_latest(to, entry.state, now, entry.full_at);
                return;
            }
            const auto *key_chars = reinterpret_cast<const char *>(key);
            const core::Micros from_origin = core::key_origin(change.from, key_chars, key_len);
            const core::Micros to_origin = core::key_origin(change.to, key_chars, key_len);
            entry.state = core::rescaled_state(from, to, entry.state, now, from_origin, to_origin, change.rule);
            entry.full_at = now + std::max<core::Micros>(1, core::time_to_full(to, &entry.state, now, to_origin));
            entry.definition = to_definition;
        });
}

// The limit's definition changed by hand (an UPDATE of rate_limit_config, not rate_limit_define): every
// entry keeps its numbers, read under the new definition as they are, and only when it is full again is
// recomputed, so that neither cleanup nor eviction drops a key that still owes units under the new numbers.
// Never earlier than before: a key with an override (numbers of its own, unknown here) only stays longer.
// Entries of another definition are left alone: rate_limit_define, whose upsert fires the trigger that
// asks for this, carries them over itself when the same transaction commits (after this pass, which left
// their numbers as they were).
void refresh_limit(const PendingForget &change) {
    const uint64 limit_hash = scoped_limit_hash(change.name, strlen(change.name));
    const core::Limit to = core::shard_limit(change.to);
    const uint64 from_definition = core::memory_definition(change.from);
    const uint64 to_definition = core::memory_definition(change.to);
    const bool keyed = core::uses_window_grid(change.to.algorithm) && !change.to.has_start;
    const core::Micros now = clock_now();
    for_each_entry_of_limit(limit_hash, [&](core::MemoryTable &, uint32, int, core::MemoryEntry &entry) {
        if (entry.full_at == core::MEMORY_NO_STATE || entry.full_at <= now) return;
        // Made under the old row (or, numbers unknown, saved by release 0.1.0): the same numbers, now
        // read under the new row.
        const bool unknown = core::memory_shape(entry.definition) == core::memory_shape(from_definition) &&
                             (entry.definition & ~core::MEMORY_SHAPE_BITS) == core::MEMORY_NUMBERS_UNKNOWN;
        if ((entry.definition == from_definition || unknown) &&
            core::memory_shape(from_definition) == core::memory_shape(to_definition))
            entry.definition = to_definition;
        if (entry.definition != to_definition) return;
        const unsigned char *key = nullptr;
        size_t key_len = 0;
        if (keyed && !core::memory_identity_key(entry.identity, &key, &key_len)) {
            entry.full_at = full_again_at_the_latest(to, entry.state, now, entry.full_at);
            return;
        }
        const core::Micros origin = core::key_origin(change.to, reinterpret_cast<const char *>(key), key_len);
        entry.full_at =
            std::max(entry.full_at, now + std::max<core::Micros>(1, core::time_to_full(to, &entry.state, now, origin)));
    });
}

// This backend's markers (ChangeMarkers): set for the rescales it is committing, before the new definitions
// become visible; cleared once they are carried over (or the commit fails), and at exit whatever happens.
bool own_markers = false;

void clear_own_markers() {
    if (!own_markers || shared_header == nullptr) return;
    ChangeMarkers &changes = shared_header->changes;
    SpinLockAcquire(&changes.mutex);
    int kept = 0;
    for (int i = 0; i < changes.count; ++i)
        if (changes.owner[i] != MyProcPid) {
            changes.limit_hash[kept] = changes.limit_hash[i];
            changes.owner[kept] = changes.owner[i];
            ++kept;
        }
    changes.count = kept;
    SpinLockRelease(&changes.mutex);
    own_markers = false;
    ConditionVariableBroadcast(&changes.cleared);
}

void clear_own_markers_at_exit(int, Datum) { clear_own_markers(); }

void set_markers() {
    if (!store_attached) attach();
    static bool exit_hook = false;
    if (!exit_hook) {
        before_shmem_exit(clear_own_markers_at_exit, 0);
        exit_hook = true;
    }
    ChangeMarkers &changes = shared_header->changes;
    // One marker per limit changed, or, for a transaction changing more than a few, one for every limit
    // (ANY_LIMIT): the table never fills with one transaction's markers.
    uint64 hashes[MAX_CHANGES / 4];
    int count = 0;
    bool every = false;
    for (int i = 0; i < pending_count && !every; ++i) {
        if (!pending[i].rescale || pending[i].database != InvalidOid) continue;
        const uint64 hash = scoped_limit_hash(pending[i].name, strlen(pending[i].name));
        bool seen = false;
        for (int k = 0; k < count && !seen; ++k) seen = hashes[k] == hash;
        if (seen) continue;
        if (count == static_cast<int>(lengthof(hashes)))
            every = true;
        else
            hashes[count++] = hash;
    }
    if (every) {
        hashes[0] = ANY_LIMIT;
        count = 1;
    }
    for (int k = 0; k < count; ++k) {
        for (;;) {
            SpinLockAcquire(&changes.mutex);
            const bool room = changes.count < MAX_CHANGES;
            if (room) {
                changes.limit_hash[changes.count] = hashes[k];
                changes.owner[changes.count] = MyProcPid;
                ++changes.count;
                own_markers = true;
            }
            SpinLockRelease(&changes.mutex);
            if (room) break;
            // Other transactions' markers fill the table: wait for one of them to commit.
            (void)ConditionVariableTimedSleep(&changes.cleared, 10, PG_WAIT_EXTENSION);
        }
    }
    ConditionVariableCancelSleep();
}

void report_evictions();
void on_object_access(ObjectAccessType access, Oid class_id, Oid object_id, int sub_id, void *arg);

void on_transaction_end(XactEvent event, void *) {
    if (event == XACT_EVENT_COMMIT || event == XACT_EVENT_ABORT) report_evictions();
    if (pending_count == 0) return;
    if (event == XACT_EVENT_PRE_PREPARE) {
        // A dropped extension or database: its entries go at PREPARE (COMMIT PREPARED runs in a session that
        // has no such callback); a ROLLBACK PREPARED then finds the keys full. A limit's change cannot wait
        // that way: it would carry the entries over to a definition not yet in force.
        bool databases_only = true;
        for (int i = 0; i < pending_count; ++i) databases_only = databases_only && pending[i].database != InvalidOid;
        if (!databases_only)
            ereport(ERROR, (errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
                            errmsg("cannot PREPARE a transaction that dropped or redefined a memory rate limit"),
                            errdetail("Its keys' memory state is removed or carried over when the transaction "
                                      "commits, which a prepared transaction cannot arrange.")));
        for (int i = 0; i < pending_count; ++i) forget_database(pending[i].database);
        pending_count = 0;
        return;
    }
    if (event == XACT_EVENT_PRE_COMMIT) {
        set_markers();  // before the new definitions become visible to other sessions
        return;
    }
    if (event == XACT_EVENT_COMMIT)
        for (int i = 0; i < pending_count; ++i) {  // takes no lock that can fail
            if (pending[i].database != InvalidOid)
                forget_database(pending[i].database);
            else if (pending[i].rescale && pending[i].refresh)
                refresh_limit(pending[i]);
            else if (pending[i].rescale && pending[i].whole_limit)
                rescale_limit(pending[i]);
            else if (pending[i].rescale)
                rescale_keys(pending[i]);
            else
                forget_limit(pending[i].name);
        }
    if (event == XACT_EVENT_COMMIT || event == XACT_EVENT_ABORT || event == XACT_EVENT_PARALLEL_ABORT) {
        for (int i = 0; i < pending_count; ++i)
            if (pending[i].keys != nullptr) pfree(pending[i].keys);
        pending_count = 0;
        clear_own_markers();  // the entries are carried over (or the commit failed)
    }
}

void on_subtransaction_end(SubXactEvent event, SubTransactionId, SubTransactionId, void *) {
    const int level = GetCurrentTransactionNestLevel();
    if (event == SUBXACT_EVENT_ABORT_SUB) {
        int kept = 0;
        for (int i = 0; i < pending_count; ++i) {
            if (pending[i].level < level)
                pending[kept++] = pending[i];
            else if (pending[i].keys != nullptr)
                pfree(pending[i].keys);
        }
        pending_count = kept;
    } else if (event == SUBXACT_EVENT_COMMIT_SUB) {
        for (int i = 0; i < pending_count; ++i)
            if (pending[i].level >= level) pending[i].level = level - 1;
    }
}

// The memory limits' figures, from every partition's counters.
struct Usage {
    uint64 entries;
    uint64 evicted_full;
    uint64 evicted_not_full;
};

Usage usage() {
    Usage total{0, 0, 0};
    const MemoryStore &memory = memory_store();
    for (uint32 partition = 0; partition < memory.table.partitions(); ++partition) {
        LWLockAcquire(&memory.partition_locks[partition].lock, LW_SHARED);
        const core::MemoryPartitionCounters &counters = memory.table.counters(partition);
        total.entries += counters.entries;
        total.evicted_full += counters.evicted_full;
        total.evicted_not_full += counters.evicted_not_full;
        LWLockRelease(&memory.partition_locks[partition].lock);
    }
    return total;
}

// rate_limit_memory_usage() -> (entries, capacity, bytes, evicted_full, evicted_not_full)
Datum memory_usage_body(FunctionCallInfo fcinfo) {
    TupleDesc desc = nullptr;
    if (get_call_result_type(fcinfo, nullptr, &desc) != TYPEFUNC_COMPOSITE || desc->natts != 5)
        elog(ERROR, "pg_ratelimit: rate_limit_memory_usage must return a row of five columns");
    Datum values[5] = {0, 0, 0, 0, 0};
    bool nulls[5] = {false, false, false, false, false};
    if (preloaded) {
        const Usage total = usage();
        const core::MemoryTable &table = memory_store().table;
        values[0] = Int64GetDatum(static_cast<int64>(total.entries));
        values[1] = Int64GetDatum(static_cast<int64>(table.max_entries()) * table.partitions());
        values[2] = Int64GetDatum(static_cast<int64>(shared_size()));
        values[3] = Int64GetDatum(static_cast<int64>(total.evicted_full));
        values[4] = Int64GetDatum(static_cast<int64>(total.evicted_not_full));
    }
    return HeapTupleGetDatum(heap_form_tuple(BlessTupleDesc(desc), values, nulls));
}

TimestampTz last_eviction_warning = 0;
int64 unreported_evictions = 0;  // keys this session forgot since its last WARNING

// At the end of a transaction: the keys it (and, within the minute before, this session) forgot.
void report_evictions() {
    if (unreported_evictions == 0) return;
    const TimestampTz now = GetCurrentTimestamp();
    if (last_eviction_warning != 0 && now - last_eviction_warning < USECS_PER_MINUTE) return;
    ereport(WARNING, (errmsg("pg_ratelimit: the memory state table is full: " INT64_FORMAT
                             " keys that were not back at full capacity were evicted and start over",
                             unreported_evictions),
                      errdetail("rate_limit_storage counts every eviction."),
                      errhint("Raise pg_ratelimit.memory_keys (currently %d) and restart the server.", memory_keys)));
    last_eviction_warning = now;
    unreported_evictions = 0;
}

}  // namespace

const MemoryStore &memory_store() {
    require_memory_state();
    if (!store_attached) attach();
    return store;
}

core::MemoryIdentity memory_identity(const text *limit_name, const text *key, int shard, uint64 seed) {
    const ScopedName scoped = scoped_name(VARDATA_ANY(limit_name), VARSIZE_ANY_EXHDR(limit_name));
    const char *limit = scoped.bytes;
    const size_t limit_len = scoped.length;
    const char *key_bytes = VARDATA_ANY(key);
    const size_t key_len = VARSIZE_ANY_EXHDR(key);
    core::MemoryIdentity identity;
    if (core::memory_identity_inline(limit, limit_len, key_bytes, key_len, shard, seed, &identity)) {
        identity.database = MyDatabaseId;
        return identity;
    }
    // Too long to keep as it is: the SHA-256 of the same encoding.
    unsigned char header[core::MEMORY_IDENTITY_HEADER_MAX];
    const size_t header_len = core::memory_identity_header(limit_len, key_len, shard, header);
    unsigned char digest[PG_SHA256_DIGEST_LENGTH];
    pg_cryptohash_ctx *context = pg_cryptohash_create(PG_SHA256);
    if (context == nullptr || pg_cryptohash_init(context) < 0 ||
        pg_cryptohash_update(context, header, header_len) < 0 ||
        pg_cryptohash_update(context, reinterpret_cast<const uint8 *>(limit), limit_len) < 0 ||
        pg_cryptohash_update(context, reinterpret_cast<const uint8 *>(key_bytes), key_len) < 0 ||
        pg_cryptohash_final(context, digest, sizeof(digest)) < 0)
        elog(ERROR, "pg_ratelimit: could not compute a SHA-256 digest: %s", pg_cryptohash_error(context));
    pg_cryptohash_free(context);
    identity = core::memory_identity_from_digest(limit, limit_len, digest, seed);
    identity.database = MyDatabaseId;
    return identity;
}

void memory_note_evictions(const core::EvictionCounts &counts) { unreported_evictions += counts.not_full; }

bool memory_may_evict_not_full() { return memory_eviction == static_cast<int>(Eviction::lru); }

void memory_state_init() {
    RegisterXactCallback(on_transaction_end, nullptr);
    RegisterSubXactCallback(on_subtransaction_end, nullptr);
    // Like any setting that sizes shared memory, it exists only where the library is preloaded.
    if (!process_shared_preload_libraries_in_progress) return;
    DefineCustomIntVariable("pg_ratelimit.memory_keys",
                            "How many keys the shared memory of memory rate limits holds (one per shard).",
                            "Needs shared_preload_libraries = 'pg_ratelimit'; takes effect at server start. About "
                            "165 bytes of shared memory each.",
                            &memory_keys, 100000, 1000, 100000000, PGC_POSTMASTER, 0, nullptr, nullptr, nullptr);
    DefineCustomEnumVariable(
        "pg_ratelimit.memory_eviction", "What a full memory state table forgets to make room for a new key.",
        "lru (the default): keys back at full capacity first, then the least recently used ones, which start over "
        "(anyone who can call rate_limit_request can then make keys be forgotten by flooding new keys). none: only "
        "keys back at full capacity; a new key finding no room is an error (53400).",
        &memory_eviction, static_cast<int>(Eviction::lru), EVICTIONS, PGC_SIGHUP, 0, nullptr, nullptr, nullptr);
    preloaded = true;
    previous_shmem_request_hook = shmem_request_hook;
    shmem_request_hook = shmem_request;
    previous_shmem_startup_hook = shmem_startup_hook;
    shmem_startup_hook = shmem_startup;
    previous_object_access_hook = object_access_hook;
    object_access_hook = on_object_access;
}

void require_memory_state() {
    if (!preloaded)
        ereport(ERROR, (errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
                        errmsg("memory rate limits need pg_ratelimit in shared_preload_libraries"),
                        errhint("Add pg_ratelimit to shared_preload_libraries in postgresql.conf and restart the "
                                "server, or define the limit with storage => 'durable' or 'unlogged'.")));
}

void memory_state_reset(const StateTarget &target) {
    const MemoryStore &memory = memory_store();
    auto &table = const_cast<core::MemoryTable &>(memory.table);
    for (int shard = 0; shard < target.limit.shards; ++shard) {
        const core::MemoryIdentity identity =
            memory_identity(DatumGetTextPP(target.limit_name), DatumGetTextPP(target.key), shard, table.seed());
        const uint32 partition = table.partition_of(identity.hash);
        LWLockAcquire(&memory.partition_locks[partition].lock, LW_EXCLUSIVE);
        const int slot = table.find(partition, identity);
        if (slot >= 0) table.remove(partition, slot);
        LWLockRelease(&memory.partition_locks[partition].lock);
    }
}

int64 memory_state_sweep(const text *limit_name, const core::Limit &) {
    // Full CLEANUP_MARGIN ago, as for table rows: a clock stepped back by less can mint nothing.
    const MemoryStore &memory = memory_store();
    auto &table = const_cast<core::MemoryTable &>(memory.table);
    const uint64 limit_hash = scoped_limit_hash(VARDATA_ANY(limit_name), VARSIZE_ANY_EXHDR(limit_name));
    const core::Micros before = clock_now() - core::CLEANUP_MARGIN;
    int64 swept = 0;
    for (uint32 partition = 0; partition < table.partitions(); ++partition) {
        LWLockAcquire(&memory.partition_locks[partition].lock, LW_EXCLUSIVE);
        swept += table.sweep_full(partition, before, limit_hash);
        LWLockRelease(&memory.partition_locks[partition].lock);
        CHECK_FOR_INTERRUPTS();
    }
    return swept;
}

namespace {

PendingForget &new_pending(const text *limit_name) {
    if (pending_count == pending_capacity) {
        pending_capacity = pending_capacity == 0 ? 8 : pending_capacity * 2;
        pending = static_cast<PendingForget *>(
            pending == nullptr ? MemoryContextAlloc(TopMemoryContext, pending_capacity * sizeof(PendingForget))
                               : repalloc(pending, pending_capacity * sizeof(PendingForget)));
    }
    PendingForget &entry = pending[pending_count++];
    entry.name[0] = '\0';
    if (limit_name != nullptr) text_to_cstring_buffer(limit_name, entry.name, sizeof(entry.name));
    entry.level = GetCurrentTransactionNestLevel();
    entry.rescale = false;
    entry.refresh = false;
    entry.database = InvalidOid;
    entry.whole_limit = true;
    entry.keys = nullptr;
    entry.key_count = 0;
    return entry;
}

}  // namespace

void memory_state_forget_at_commit(const text *limit_name) {
    if (!preloaded) return;  // there is no memory state to forget
    (void)new_pending(limit_name);
}

void memory_state_rescale_at_commit(const text *limit_name, const core::Limit &from, const core::Limit &to,
                                    core::Rescale rule) {
    if (!preloaded) return;  // there is no memory state to rescale
    PendingForget &entry = new_pending(limit_name);
    entry.rescale = true;
    entry.from = from;
    entry.to = to;
    entry.rule = rule;
}

namespace {

// A database's entries go when it is dropped, and when pg_ratelimit is dropped from it (DROP EXTENSION, or
// DROP SCHEMA ... CASCADE of its schema): nothing else would remove them (no limit is left to drop), a
// clean restart would save and load them again, and they would fill the table for other databases for good
// (under memory_eviction = none, 53400 for their new keys), or be found again by a database or an
// extension created later with the same OID and limit names. When the drop commits (a failed drop keeps
// them): DROP DATABASE commits in the backend that ran it.
void on_object_access(ObjectAccessType access, Oid class_id, Oid object_id, int sub_id, void *arg) {
    if (previous_object_access_hook != nullptr) previous_object_access_hook(access, class_id, object_id, sub_id, arg);
    if (access != OAT_DROP || !preloaded) return;
    Oid database = InvalidOid;
    if (class_id == DatabaseRelationId)
        database = object_id;
    else if (class_id == ExtensionRelationId && object_id == get_extension_oid("pg_ratelimit", true))
        database = MyDatabaseId;
    if (database == InvalidOid) return;
    PendingForget &entry = new_pending(nullptr);
    entry.database = database;
}

}  // namespace

void memory_wait_for_change(const text *limit_name) {
    if (!preloaded) return;
    if (!store_attached) attach();
    const uint64 hash = scoped_limit_hash(VARDATA_ANY(limit_name), VARSIZE_ANY_EXHDR(limit_name));
    ChangeMarkers &changes = shared_header->changes;
    for (;;) {
        bool changing = false;
        SpinLockAcquire(&changes.mutex);
        for (int i = 0; i < changes.count && !changing; ++i)
            changing =
                (changes.limit_hash[i] == hash || changes.limit_hash[i] == ANY_LIMIT) && changes.owner[i] != MyProcPid;
        SpinLockRelease(&changes.mutex);
        if (!changing) break;
        // Woken when markers go; a timed sleep all the same, for a broadcast missed between the look and here.
        (void)ConditionVariableTimedSleep(&changes.cleared, 10, PG_WAIT_EXTENSION);
    }
    ConditionVariableCancelSleep();
}

int memory_state_changes_queued() { return pending_count; }

void memory_state_cancel_refresh(const text *limit_name, int since) {
    char name[MAX_LIMIT_NAME_BYTES + 1];
    text_to_cstring_buffer(limit_name, name, sizeof(name));
    int kept = since;
    for (int i = since; i < pending_count; ++i)
        if (!(pending[i].refresh && strcmp(pending[i].name, name) == 0)) pending[kept++] = pending[i];
    pending_count = kept;
}

void memory_state_refresh_at_commit(const text *limit_name, const core::Limit &from, const core::Limit &to) {
    if (!preloaded) return;
    PendingForget &entry = new_pending(limit_name);
    entry.rescale = true;
    entry.refresh = true;
    entry.from = from;
    entry.to = to;
    entry.rule = core::Rescale::as_is;
}

// --- Per-key tiers (override_store.hpp) ---
namespace {

int compare_key_rescales(const void *a, const void *b) {
    const uint64 x = static_cast<const KeyRescale *>(a)->identity.hash;
    const uint64 y = static_cast<const KeyRescale *>(b)->identity.hash;
    return x < y ? -1 : x > y ? 1 : 0;
}

// The keys' entries to carry over, one per shard, identified now: at commit nothing may allocate or fail.
void attach_keys(PendingForget *entry, const text *limit_name, const MemoryKeyLimits *keys, int key_count) {
    if (key_count == 0) return;
    const uint64 seed = memory_store().table.seed();
    int total = 0;
    for (int i = 0; i < key_count; ++i) total += keys[i].to.shards;
    auto *rescales = static_cast<KeyRescale *>(MemoryContextAlloc(TopMemoryContext, sizeof(KeyRescale) * total));
    entry->keys = rescales;  // freed with the entry, also if what follows fails
    int n = 0;
    for (int i = 0; i < key_count; ++i) {
        const text *key = cstring_to_text_with_len(keys[i].key, keys[i].key_length);
        const core::Limit from = core::shard_limit(keys[i].from);
        const core::Limit to = core::shard_limit(keys[i].to);
        for (int shard = 0; shard < keys[i].to.shards; ++shard) {
            KeyRescale &rescale = rescales[n++];
            rescale.identity = memory_identity(limit_name, key, shard, seed);
            rescale.definition = core::memory_definition(keys[i].from);
            rescale.to_definition = core::memory_definition(keys[i].to);
            rescale.from = from;
            rescale.to = to;
            rescale.from_origin = core::key_origin(keys[i].from, keys[i].key, keys[i].key_length);
            rescale.to_origin = core::key_origin(keys[i].to, keys[i].key, keys[i].key_length);
        }
    }
    qsort(rescales, n, sizeof(KeyRescale), compare_key_rescales);
    entry->key_count = n;
}

}  // namespace

void memory_state_rescale_with_keys_at_commit(const text *limit_name, const core::Limit &from, const core::Limit &to,
                                              core::Rescale rule, const MemoryKeyLimits *keys, int key_count) {
    if (!preloaded) return;  // there is no memory state to rescale
    memory_state_rescale_at_commit(limit_name, from, to, rule);
    attach_keys(&pending[pending_count - 1], limit_name, keys, key_count);
}

void memory_state_rescale_keys_at_commit(const text *limit_name, core::Rescale rule, const MemoryKeyLimits *keys,
                                         int key_count) {
    if (!preloaded || key_count == 0) return;
    PendingForget &entry = new_pending(limit_name);
    entry.rescale = true;
    entry.whole_limit = false;
    entry.rule = rule;
    entry.from = keys[0].from;
    entry.to = keys[0].to;
    attach_keys(&entry, limit_name, keys, key_count);
}

}  // namespace pg_ratelimit

PG_RATELIMIT_SQL_FUNCTION(rate_limit_memory_usage, pg_ratelimit::memory_usage_body)
