// The shared table behind rate_limit_stats (stats.hpp says what it promises): its shared memory, the
// per-call counting, the backend's memory of entries, the view's rows and the reset function.
#include "stats/stats.hpp"

#include <cstring>

#include "call_context.hpp"
#include "catalog/limit_cache.hpp"
#include "cpp_boundary.hpp"

namespace pg_ratelimit {
namespace {

constexpr const char *SHMEM_NAME = "pg_ratelimit stats";
// A freed entry is not reused before this: a call checks its entry's generation, then adds; a reset
// between the two must not hand the entry to another limit first.
constexpr TimestampTz REUSE_GRACE = USECS_PER_SEC;

int stats_limits = 1000;  // pg_ratelimit.stats_limits
bool stats_on = true;     // pg_ratelimit.stats
bool preloaded = false;
shmem_request_hook_type previous_shmem_request_hook = nullptr;
shmem_startup_hook_type previous_shmem_startup_hook = nullptr;

// The counters of one row, on a cache line of their own: the line every call of the limit writes. The
// units_* hold the bits of a double (add_units): units may be fractional.
enum Counter {
    allowed,
    denied,
    shadow_denied,
    checks,
    retries,
    units_consumed,
    units_reserved,
    units_refunded,
    COUNTERS
};
struct alignas(64) Counters {
    pg_atomic_uint64 value[COUNTERS];
};
static_assert(sizeof(Counters) == 64, "one cache line of counters");

struct Entry {
    Counters counters;
    // Changed only under the table's lock, exclusively; read under it, shared, by lookups. `generation`
    // is read without it by counting calls (see stats.hpp).
    pg_atomic_uint32 generation;  // bumped when the entry is freed
    Oid database;                 // InvalidOid: free
    uint32 name_hash;
    int name_length;
    TimestampTz counting_since;  // stats_reset: when the entry was taken or last zeroed
    TimestampTz freed_at;        // 0: never used
    char name[MAX_LIMIT_NAME_BYTES];
};

struct Shared {
    LWLock *lock;  // taking and freeing entries; zeroing
    int capacity;
    Entry overflow;  // limits that found no free entry, of every database
    Entry entries[FLEXIBLE_ARRAY_MEMBER];
};

Shared *shared = nullptr;

Size shared_size() { return add_size(offsetof(Shared, entries), mul_size(stats_limits, sizeof(Entry))); }

void zero_counters(Counters *counters) {
    for (pg_atomic_uint64 &counter : counters->value) pg_atomic_write_u64(&counter, 0);  // also the bits of 0.0
}

void init_entry(Entry *entry) {
    for (pg_atomic_uint64 &counter : entry->counters.value) pg_atomic_init_u64(&counter, 0);
    pg_atomic_init_u32(&entry->generation, 0);
    entry->database = InvalidOid;
    entry->name_hash = 0;
    entry->name_length = 0;
    entry->counting_since = 0;
    entry->freed_at = 0;
}

void shmem_request() {
    if (previous_shmem_request_hook != nullptr) previous_shmem_request_hook();
    RequestAddinShmemSpace(shared_size());
    RequestNamedLWLockTranche(SHMEM_NAME, 1);
}

void shmem_startup() {
    if (previous_shmem_startup_hook != nullptr) previous_shmem_startup_hook();
    LWLockAcquire(AddinShmemInitLock, LW_EXCLUSIVE);
    bool found = false;
    shared = static_cast<Shared *>(ShmemInitStruct(SHMEM_NAME, shared_size(), &found));
    if (!found) {
        shared->lock = &GetNamedLWLockTranche(SHMEM_NAME)->lock;
        shared->capacity = stats_limits;
        init_entry(&shared->overflow);
        shared->overflow.counting_since = GetCurrentTimestamp();
        for (int i = 0; i < shared->capacity; ++i) init_entry(&shared->entries[i]);
    }
    LWLockRelease(AddinShmemInitLock);
}

void require_stats() {
    if (!preloaded || shared == nullptr)
        ereport(ERROR, (errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
                        errmsg("rate limit statistics need pg_ratelimit in shared_preload_libraries"),
                        errdetail("Without it no call is counted; every rate limit function works as before."),
                        errhint("Add pg_ratelimit to shared_preload_libraries in postgresql.conf and restart the "
                                "server.")));
}

uint32 name_hash(const char *name, int length) {
    return hash_bytes(reinterpret_cast<const unsigned char *>(name), length);
}

bool entry_is(const Entry &entry, Oid database, uint32 hash, const char *name, int length) {
    return entry.database == database && entry.name_hash == hash && entry.name_length == length &&
           memcmp(entry.name, name, length) == 0;
}

Entry *find_entry(Oid database, uint32 hash, const char *name, int length) {
    for (int i = 0; i < shared->capacity; ++i)
        if (entry_is(shared->entries[i], database, hash, name, length)) return &shared->entries[i];
    return nullptr;
}

// Frees an entry (under the lock, exclusively): sessions that remember it look it up again. So do those
// counting in the overflow row, since a row may now be free for their limit.
void free_entry(Entry *entry, TimestampTz now) {
    entry->database = InvalidOid;
    entry->freed_at = now;
    pg_atomic_fetch_add_u32(&entry->generation, 1);
    pg_atomic_fetch_add_u32(&shared->overflow.generation, 1);
}

// The limit's entry in this database, taken if it has none; the overflow entry if the table is full.
// *generation gets the entry's generation, read under the lock: a reset right after cannot leave the
// caller counting into a freed entry with a generation it takes for current.
Entry *shared_entry(const char *name, int length, uint32 *generation) {
    const uint32 hash = name_hash(name, length);
    LWLockAcquire(shared->lock, LW_SHARED);
    Entry *entry = find_entry(MyDatabaseId, hash, name, length);
    if (entry != nullptr) *generation = pg_atomic_read_u32(&entry->generation);
    LWLockRelease(shared->lock);
    if (entry != nullptr) return entry;
    LWLockAcquire(shared->lock, LW_EXCLUSIVE);
    entry = find_entry(MyDatabaseId, hash, name, length);
    if (entry == nullptr) {
        const TimestampTz now = GetCurrentTimestamp();
        for (int i = 0; i < shared->capacity && entry == nullptr; ++i) {
            Entry &candidate = shared->entries[i];
            if (candidate.database == InvalidOid &&
                (candidate.freed_at == 0 || now - candidate.freed_at >= REUSE_GRACE))
                entry = &candidate;
        }
        if (entry != nullptr) {
            zero_counters(&entry->counters);
            memcpy(entry->name, name, length);
            entry->name_length = length;
            entry->name_hash = hash;
            entry->counting_since = now;
            entry->database = MyDatabaseId;
        }
    }
    *generation = pg_atomic_read_u32(entry != nullptr ? &entry->generation : &shared->overflow.generation);
    LWLockRelease(shared->lock);
    if (entry != nullptr) return entry;
    static bool warned = false;  // once per backend: the overflow row keeps counting
    if (!warned) {
        warned = true;
        ereport(WARNING,
                (errmsg("rate limit statistics are full: limit \"%.*s\" is counted in the overflow row", length, name),
                 errhint("Raise pg_ratelimit.stats_limits (a restart), or remove the rows of limits no "
                         "longer used with rate_limit_stats_reset().")));
    }
    return &shared->overflow;
}

// What the backend remembers of an entry: valid while the entry's generation is the same.
struct Remembered {
    char name[MAX_LIMIT_NAME_BYTES + 1];  // hash key, NUL-terminated
    Entry *entry;
    uint32 generation;
    // Counting in the overflow row: when to look for a row of its own again (a freed row is not reused
    // for REUSE_GRACE, so a session that found none right after a reset must try again later).
    TimestampTz recheck_at;
};

HTAB *remembered = nullptr;
Remembered *last = nullptr;  // the entry counted last (most calls count the same limit as the one before)

Remembered *remember(const char *name, int length) {
    if (remembered == nullptr)
        remembered = create_limit_name_table("pg_ratelimit stats entries", sizeof(Remembered), TopMemoryContext);
    char key[MAX_LIMIT_NAME_BYTES + 1];
    memset(key, 0, sizeof(key));
    memcpy(key, name, length);
    bool found = false;
    auto *slot = static_cast<Remembered *>(hash_search(remembered, key, HASH_ENTER, &found));
    if (!found) slot->entry = nullptr;
    return slot;
}

Counters *counters_of(const text *limit_name) {
    const char *name = VARDATA_ANY(limit_name);
    const int length = static_cast<int>(VARSIZE_ANY_EXHDR(limit_name));
    if (length > MAX_LIMIT_NAME_BYTES) return nullptr;  // no such limit can exist (limit_lookup refused it)
    Remembered *known = last;
    if (known == nullptr || memcmp(known->name, name, length) != 0 || known->name[length] != '\0') {
        known = remember(name, length);
        last = known;
    }
    if (known->entry == nullptr || pg_atomic_read_u32(&known->entry->generation) != known->generation ||
        (known->entry == &shared->overflow && GetCurrentTimestamp() >= known->recheck_at)) {
        known->entry = shared_entry(name, length, &known->generation);
        known->recheck_at = GetCurrentTimestamp() + REUSE_GRACE;
    }
    return &known->entry->counters;
}

void add_units(pg_atomic_uint64 *bits, double units) {
    uint64 old_bits = pg_atomic_read_u64(bits);
    for (;;) {
        double value = 0;
        memcpy(&value, &old_bits, sizeof(value));
        value += units;
        uint64 new_bits = 0;
        memcpy(&new_bits, &value, sizeof(new_bits));
        if (pg_atomic_compare_exchange_u64(bits, &old_bits, new_bits)) return;
    }
}

double units_of(pg_atomic_uint64 *bits) {
    const uint64 raw = pg_atomic_read_u64(bits);
    double value = 0;
    memcpy(&value, &raw, sizeof(value));
    return value;
}

// The columns of rate_limit_stats_rows(), in order.
constexpr int STATS_COLUMNS = 11;

void put_row(Tuplestorestate *rows, TupleDesc desc, Entry *entry, bool overflow) {
    Datum values[STATS_COLUMNS];
    bool nulls[STATS_COLUMNS];
    memset(nulls, 0, sizeof(nulls));
    Counters &c = entry->counters;
    const auto count = [&](Counter counter) { return static_cast<int64>(pg_atomic_read_u64(&c.value[counter])); };
    if (overflow)
        nulls[0] = true;
    else
        values[0] = PointerGetDatum(cstring_to_text_with_len(entry->name, entry->name_length));
    const int64 allowed_count = count(allowed);
    const int64 denied_count = count(denied);
    values[1] = Int64GetDatum(allowed_count + denied_count);
    values[2] = Int64GetDatum(allowed_count);
    values[3] = Int64GetDatum(denied_count);
    values[4] = Int64GetDatum(count(shadow_denied));
    values[5] = Int64GetDatum(count(checks));
    values[6] = Float8GetDatum(units_of(&c.value[units_consumed]));
    values[7] = Float8GetDatum(units_of(&c.value[units_reserved]));
    values[8] = Float8GetDatum(units_of(&c.value[units_refunded]));
    values[9] = Int64GetDatum(count(retries));
    values[10] = TimestampTzGetDatum(entry->counting_since);
    tuplestore_putvalues(rows, desc, values, nulls);
}

bool counted_anything(Counters *c) {
    for (pg_atomic_uint64 &counter : c->value)
        if (pg_atomic_read_u64(&counter) != 0) return true;
    return false;
}

// rate_limit_stats_rows() -> the rows of this database's limits, then the overflow row if it counted
// anything.
Datum stats_rows_body(FunctionCallInfo fcinfo) {
    require_stats();
    InitMaterializedSRF(fcinfo, MAT_SRF_USE_EXPECTED_DESC);
    const auto *result = reinterpret_cast<ReturnSetInfo *>(fcinfo->resultinfo);
    if (result->setDesc->natts != STATS_COLUMNS)
        ereport(ERROR, (errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
                        errmsg("pg_ratelimit cannot return these columns: rate_limit_stats_rows was altered"),
                        errhint("Re-create the extension.")));
    // Under the lock, shared: no entry changes hands while its name is copied.
    LWLockAcquire(shared->lock, LW_SHARED);
    for (int i = 0; i < shared->capacity; ++i)
        if (shared->entries[i].database == MyDatabaseId)
            put_row(result->setResult, result->setDesc, &shared->entries[i], false);
    if (counted_anything(&shared->overflow.counters))
        put_row(result->setResult, result->setDesc, &shared->overflow, true);
    LWLockRelease(shared->lock);
    return static_cast<Datum>(0);
}

// rate_limit_stats_reset(limit_name): zeroes the limit's row (an unknown limit without a row is 42704; NULL
// is 22004, never "all": the view's overflow row has a NULL name). rate_limit_stats_reset(), without an
// argument, removes every row of this database and zeroes the overflow row (every database's).
Datum stats_reset_body(FunctionCallInfo fcinfo) {
    const CallContext context = call_context(fcinfo, false);
    require_stats();
    const TimestampTz now = GetCurrentTimestamp();
    if (PG_NARGS() == 0) {
        LWLockAcquire(shared->lock, LW_EXCLUSIVE);
        for (int i = 0; i < shared->capacity; ++i)
            if (shared->entries[i].database == MyDatabaseId) free_entry(&shared->entries[i], now);
        zero_counters(&shared->overflow.counters);
        shared->overflow.counting_since = now;
        LWLockRelease(shared->lock);
        PG_RETURN_VOID();
    }
    if (PG_ARGISNULL(0))
        ereport(ERROR, (errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED), errmsg("limit_name must not be null"),
                        errhint("rate_limit_stats_reset() without an argument resets every limit.")));
    const text *limit_name = PG_GETARG_TEXT_PP(0);
    require_limit_name_length(limit_name);
    const char *name = VARDATA_ANY(limit_name);
    const int length = static_cast<int>(VARSIZE_ANY_EXHDR(limit_name));
    LWLockAcquire(shared->lock, LW_EXCLUSIVE);
    Entry *entry = find_entry(MyDatabaseId, name_hash(name, length), name, length);
    if (entry != nullptr) {
        zero_counters(&entry->counters);
        entry->counting_since = now;
    }
    LWLockRelease(shared->lock);
    // A limit without a row: an error unless it exists (a typo must not pass for a reset).
    if (entry == nullptr) (void)limit_lookup(context.extension, context.schema, limit_name);
    PG_RETURN_VOID();
}

object_access_hook_type previous_object_access_hook = nullptr;

// DROP DATABASE frees the database's rows: nothing else would (its sessions are gone, and a reset runs in
// a database), so they would fill the table for good, and a database created later with the same OID
// would find and continue them. Runs in the dropping backend, before the drop commits; a drop that then
// fails has only lost its counts.
void on_object_access(ObjectAccessType access, Oid class_id, Oid object_id, int sub_id, void *arg) {
    if (previous_object_access_hook != nullptr) previous_object_access_hook(access, class_id, object_id, sub_id, arg);
    if (access != OAT_DROP || class_id != DatabaseRelationId || shared == nullptr) return;
    const TimestampTz now = GetCurrentTimestamp();
    LWLockAcquire(shared->lock, LW_EXCLUSIVE);
    for (int i = 0; i < shared->capacity; ++i)
        if (shared->entries[i].database == object_id) free_entry(&shared->entries[i], now);
    LWLockRelease(shared->lock);
}

}  // namespace

void stats_init() {
    DefineCustomBoolVariable("pg_ratelimit.stats", "Counts the calls of each rate limit for rate_limit_stats.",
                             "Needs shared_preload_libraries = 'pg_ratelimit'. Off: calls are not counted (the "
                             "counters keep what they had).",
                             &stats_on, true, PGC_SUSET, 0, nullptr, nullptr, nullptr);
    // Like any setting that sizes shared memory, it exists only where the library is preloaded.
    if (!process_shared_preload_libraries_in_progress) return;
    DefineCustomIntVariable("pg_ratelimit.stats_limits",
                            "How many limits (per database and name) rate_limit_stats counts separately.",
                            "Needs shared_preload_libraries = 'pg_ratelimit'; takes effect at server start. "
                            "Limits beyond it are counted together in an overflow row.",
                            &stats_limits, 1000, 10, 1000000, PGC_POSTMASTER, 0, nullptr, nullptr, nullptr);
    preloaded = true;
    previous_shmem_request_hook = shmem_request_hook;
    shmem_request_hook = shmem_request;
    previous_shmem_startup_hook = shmem_startup_hook;
    shmem_startup_hook = shmem_startup;
    previous_object_access_hook = object_access_hook;
    object_access_hook = on_object_access;
}

void stats_count(const text *limit_name, SettleMode mode, bool reserve, double cost, const core::Outcome &outcome,
                 int lost_races) {
    if (!stats_on || shared == nullptr) return;
    Counters *c = counters_of(limit_name);
    if (c == nullptr) return;
    pg_atomic_uint64 *v = c->value;
    switch (mode) {
        case SettleMode::request:
            if (!outcome.allowed) {
                pg_atomic_fetch_add_u64(&v[denied], 1);
            } else {
                pg_atomic_fetch_add_u64(&v[allowed], 1);
                if (outcome.shadow_denied)
                    pg_atomic_fetch_add_u64(&v[shadow_denied], 1);
                else
                    add_units(&v[reserve ? units_reserved : units_consumed], cost);
            }
            break;
        case SettleMode::check:
            pg_atomic_fetch_add_u64(&v[checks], 1);
            break;
        case SettleMode::refund:
            add_units(&v[units_refunded], cost);
            break;
        case SettleMode::take:
            add_units(&v[units_consumed], cost);
            break;
    }
    if (lost_races > 0) pg_atomic_fetch_add_u64(&v[retries], static_cast<uint64>(lost_races));
}

}  // namespace pg_ratelimit

PG_RATELIMIT_SQL_FUNCTION(rate_limit_stats_rows, pg_ratelimit::stats_rows_body)
PG_RATELIMIT_SQL_FUNCTION(rate_limit_stats_reset, pg_ratelimit::stats_reset_body)
