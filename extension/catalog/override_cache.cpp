#include "catalog/override_cache.hpp"

#include "catalog/limit_cache.hpp"
#include "catalog/override_relation.hpp"
#include "catalog/override_store.hpp"

namespace pg_ratelimit {
namespace {

constexpr long WHOLE_LIMIT_MAX = 10000;  // a limit's overrides read whole up to this many
constexpr long KEYS_MAX = 10000;         // keys of a larger limit remembered at most

struct KeyRef {
    const char *bytes;
    int length;
};
struct KeyEntry {
    KeyRef key;  // hash key; bytes in the limit's keys_context
    bool found;
    Override value;
};
struct LimitEntry {
    char name[MAX_LIMIT_NAME_BYTES + 1];  // hash key, NUL-terminated
    bool whole;                           // keys holds every override of the limit
    MemoryContext keys_context;
    HTAB *keys;
    long count;
};

enum class Presence { unknown, none, some };

MemoryContext cache_context = nullptr;
Oid cache_schema = InvalidOid;
Oid override_relid = InvalidOid;
Presence presence = Presence::unknown;  // whether rate_limit_override has any row
HTAB *limits = nullptr;
// The entry the last call used: most calls name the limit the call before named, found again by comparing
// the name (a dynahash lookup hashes it: measured, 0.8% of a call on a limit without overrides).
LimitEntry *last_entry = nullptr;
uint64 invalidations = 0;  // of the table, to notice one arriving during a read

void drop_cache() {
    if (cache_context != nullptr) MemoryContextDelete(cache_context);
    cache_context = nullptr;
    limits = nullptr;
    last_entry = nullptr;
    presence = Presence::unknown;
}

void on_relcache_invalidation(Datum, Oid relid) {
    if (relid != InvalidOid && relid != override_relid) return;
    ++invalidations;
    drop_cache();
}

uint32 key_hash(const void *key, Size) {
    const auto *ref = static_cast<const KeyRef *>(key);
    return hash_bytes(reinterpret_cast<const unsigned char *>(ref->bytes), ref->length);
}

int key_match(const void *a, const void *b, Size) {
    const auto *x = static_cast<const KeyRef *>(a);
    const auto *y = static_cast<const KeyRef *>(b);
    return x->length == y->length && memcmp(x->bytes, y->bytes, x->length) == 0 ? 0 : 1;
}

void new_keys(LimitEntry *entry) {
    entry->keys_context = AllocSetContextCreate(cache_context, "pg_ratelimit override keys", ALLOCSET_SMALL_SIZES);
    HASHCTL ctl;
    memset(&ctl, 0, sizeof(ctl));
    ctl.keysize = sizeof(KeyRef);
    ctl.entrysize = sizeof(KeyEntry);
    ctl.hash = key_hash;
    ctl.match = key_match;
    ctl.hcxt = entry->keys_context;
    entry->keys =
        hash_create("pg_ratelimit override keys", 64, &ctl, HASH_ELEM | HASH_FUNCTION | HASH_COMPARE | HASH_CONTEXT);
    entry->count = 0;
}

void remember_key(LimitEntry *entry, const char *bytes, int length, bool found, const Override &value) {
    KeyRef ref{bytes, length};
    bool existed = false;
    auto *key = static_cast<KeyEntry *>(hash_search(entry->keys, &ref, HASH_ENTER, &existed));
    if (!existed) {
        char *copy = static_cast<char *>(MemoryContextAlloc(entry->keys_context, Max(length, 1)));
        memcpy(copy, bytes, length);
        key->key = KeyRef{copy, length};
        ++entry->count;
    }
    key->found = found;
    key->value = value;
}

// The cache for `schema` (dropped if it was filled from another one: the extension was re-created).
void use_schema(Oid schema) {
    if (schema == cache_schema) return;
    drop_cache();
    cache_schema = schema;
    override_relid = InvalidOid;
}

HTAB *limits_table() {
    if (limits != nullptr) return limits;
    if (cache_context == nullptr)
        cache_context = AllocSetContextCreate(CacheMemoryContext, "pg_ratelimit overrides", ALLOCSET_SMALL_SIZES);
    limits = create_limit_name_table("pg_ratelimit override limits", sizeof(LimitEntry), cache_context);
    return limits;
}

// Opens a read of the table: checked and locked (which accepts pending invalidations), the SQL
// environment set up; returns the invalidation count a result may be cached under.
uint64 begin_read(const CallContext &context, int *sql_token, Scan scan) {
    override_relid = require_usable_override_table(context.extension, context.schema, AccessShareLock);
    const uint64 seen = invalidations;
    *sql_token = extension_sql_begin(context.schema, scan);
    return seen;
}

void limit_key(const text *limit_name, char *key) {
    require_limit_name_length(limit_name);
    memset(key, 0, MAX_LIMIT_NAME_BYTES + 1);
    memcpy(key, VARDATA_ANY(limit_name), VARSIZE_ANY_EXHDR(limit_name));
}

// The limit's cache entry, read on a miss; nullptr if an invalidation during the read kept it uncached
// (or the table has no row at all: then *none is set).
LimitEntry *limit_entry(const CallContext &context, const text *limit_name, bool *none) {
    *none = false;
    if (presence == Presence::unknown) {
        int token = 0;
        const uint64 seen = begin_read(context, &token, Scan::any);
        const bool any = override_any(GetLatestSnapshot());
        extension_sql_end(token);
        if (seen != invalidations) return nullptr;
        presence = any ? Presence::some : Presence::none;
    }
    if (presence == Presence::none) {
        *none = true;
        return nullptr;
    }
    const int length = VARSIZE_ANY_EXHDR(limit_name);
    if (last_entry != nullptr && length <= MAX_LIMIT_NAME_BYTES && last_entry->name[length] == '\0' &&
        memcmp(last_entry->name, VARDATA_ANY(limit_name), length) == 0)
        return last_entry;
    char name[MAX_LIMIT_NAME_BYTES + 1];
    limit_key(limit_name, name);
    auto *entry = static_cast<LimitEntry *>(hash_search(limits_table(), name, HASH_FIND, nullptr));
    if (entry != nullptr) return last_entry = entry;
    int token = 0;
    const uint64 seen = begin_read(context, &token, Scan::any);
    const OverrideSet *set = override_set_read(PointerGetDatum(limit_name), GetLatestSnapshot(), WHOLE_LIMIT_MAX);
    if (seen == invalidations) {
        entry = static_cast<LimitEntry *>(hash_search(limits_table(), name, HASH_ENTER, nullptr));
        entry->whole = !set->more_rows;
        new_keys(entry);
        if (entry->whole)
            for (int i = 0; i < set->count; ++i)
                remember_key(entry, set->keys[i], set->key_lengths[i], true, set->values[i]);
        last_entry = entry;
    }
    extension_sql_end(token);
    return entry;
}

// Reads the key's override (one index lookup).
bool read_key(const CallContext &context, const text *limit_name, const text *key, Override *value, uint64 *seen) {
    int token = 0;
    *seen = begin_read(context, &token, Scan::one_key);
    const bool found = override_read(PointerGetDatum(limit_name), PointerGetDatum(key), GetLatestSnapshot(), value);
    extension_sql_end(token);
    return found;
}

// The key's override, from the cache or read.
bool find_override(const CallContext &context, const text *limit_name, const text *key, Override *value) {
    uint64 seen = 0;
    if (server_is_yugabytedb()) return read_key(context, limit_name, key, value, &seen);
    use_schema(context.schema);
    bool none = false;
    LimitEntry *entry = limit_entry(context, limit_name, &none);
    if (none) return false;
    if (entry == nullptr) return read_key(context, limit_name, key, value, &seen);  // not cached this time
    if (entry->whole && entry->count == 0) return false;                            // a limit without any
    KeyRef ref{VARDATA_ANY(key), static_cast<int>(VARSIZE_ANY_EXHDR(key))};
    const auto *hit = static_cast<const KeyEntry *>(hash_search(entry->keys, &ref, HASH_FIND, nullptr));
    if (hit != nullptr || entry->whole) {
        if (hit == nullptr || !hit->found) return false;
        *value = hit->value;
        return true;
    }
    const bool found = read_key(context, limit_name, key, value, &seen);
    if (seen == invalidations) {  // else the entry is gone
        if (entry->count >= KEYS_MAX) {
            MemoryContextDelete(entry->keys_context);
            new_keys(entry);
        }
        remember_key(entry, ref.bytes, ref.length, found, *value);
    }
    return found;
}

}  // namespace

void override_cache_init() { CacheRegisterRelcacheCallback(on_relcache_invalidation, 0); }

core::Limit effective_limit(const CallContext &context, const core::Limit &limit, const text *limit_name,
                            const text *key, bool *overridden) {
    if (overridden != nullptr) *overridden = false;
    // The hot path of a database without overrides: one comparison.
    if (presence == Presence::none && context.schema == cache_schema) return limit;
    Override value{0, 0, 0};
    if (!find_override(context, limit_name, key, &value)) return limit;
    if (overridden != nullptr) *overridden = true;
    const core::Limit effective = apply_override(limit, value);
    require_valid_override(effective, limit_name, VARDATA_ANY(key), VARSIZE_ANY_EXHDR(key));
    return effective;
}

uint64 override_invalidations() { return invalidations; }

void override_cache_reset() { drop_cache(); }

bool limit_has_overrides(const CallContext &context, const text *limit_name) {
    if (server_is_yugabytedb()) {
        int token = 0;
        (void)begin_read(context, &token, Scan::any);
        const OverrideSet *set = override_set_read(PointerGetDatum(limit_name), GetLatestSnapshot(), 1);
        const bool any = set->count > 0;
        extension_sql_end(token);
        return any;
    }
    use_schema(context.schema);
    bool none = false;
    const LimitEntry *entry = limit_entry(context, limit_name, &none);
    if (none) return false;
    if (entry == nullptr) {
        int token = 0;
        (void)begin_read(context, &token, Scan::any);
        const OverrideSet *set = override_set_read(PointerGetDatum(limit_name), GetLatestSnapshot(), 1);
        const bool any = set->count > 0;
        extension_sql_end(token);
        return any;
    }
    return !entry->whole || entry->count > 0;
}

}  // namespace pg_ratelimit
