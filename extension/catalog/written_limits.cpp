#include "catalog/written_limits.hpp"

#include <cstring>

#include "catalog/limit_cache.hpp"
#include "catalog/override_cache.hpp"
#include "catalog/time_zones.hpp"
#include "limit_lock.hpp"
#include "lock_waits.hpp"
#include "message_text.hpp"

namespace pg_ratelimit {
namespace {

// Keys noted per limit at most (about 300 bytes each); beyond, a limit with overrides fails the commit.
constexpr int MAX_NOTED_KEYS = 10000;

struct NotedKey {
    uint64 hash;  // of the key: the hash table's key (a collision leaves a key unnoted: see note_written_key)
    text *key;
    core::Limit effective;
};

struct NotedLimit {
    text *name;
    Oid extension;
    Oid schema;
    core::Limit named;
    HTAB *keys;  // NotedKey by hash, created on the limit's first key
    int key_count;
    bool too_many_keys;
    // override_invalidations() when the limit was noted (a limit without overrides then notes no key: if one
    // was set meanwhile, which keys it concerns is unknown), or when too_many_keys was set.
    uint64 overrides_seen;
    bool own_override_change;  // this transaction changed an override of the limit (its keys were rewritten)
    bool forgotten;
    // Subtransaction nest levels: the innermost open one the limit's notes need (they go with it if it
    // aborts: its writes are undone), and the one that forgot it (0: none; an abort of it undoes that).
    int level;
    int forgotten_level;
};

// In TopTransactionContext, which goes with the transaction; the pointers are reset at its end.
NotedLimit *noted = nullptr;
int noted_count = 0;
int noted_capacity = 0;

bool same_text(const text *a, const text *b) {
    return VARSIZE_ANY_EXHDR(a) == VARSIZE_ANY_EXHDR(b) &&
           memcmp(VARDATA_ANY(a), VARDATA_ANY(b), VARSIZE_ANY_EXHDR(a)) == 0;
}

NotedLimit *find(const text *name) {
    for (int i = 0; i < noted_count; ++i)
        if (same_text(noted[i].name, name)) return &noted[i];
    return nullptr;
}

text *copied(const text *value) {
    const Size size = VARSIZE_ANY_EXHDR(value) + VARHDRSZ;
    auto *copy = static_cast<text *>(MemoryContextAlloc(TopTransactionContext, size));
    SET_VARSIZE(copy, size);
    memcpy(VARDATA(copy), VARDATA_ANY(value), size - VARHDRSZ);
    return copy;
}

[[noreturn]] void changed_meanwhile(const NotedLimit &limit, const char *how) {
    ereport(ERROR, (errcode(ERRCODE_T_R_SERIALIZATION_FAILURE),
                    errmsg("could not serialize access: rate limit \"%s\" %s while this transaction decided its "
                           "keys",
                           clipped_text(text_to_cstring(limit.name)), how),
                    errdetail("The change committed first: committed now, the keys this transaction wrote under "
                              "the old definition would be read under the new one."),
                    errhint("Retry the transaction: it then decides under the new definition.")));
    pg_unreachable();
}

// Before COMMIT or PREPARE (see the header): every noted limit's lock for the commit, then what each was
// decided under compared with what is in force.
void check_noted() {
    int live = 0;
    for (int i = 0; i < noted_count; ++i) {
        if (noted[i].forgotten) continue;
        ++live;
        const text *name = noted[i].name;
        with_bounded_lock_waits(WaitFor{name, nullptr}, [&] { (void)lock_limit(name, RowShareLock); });
    }
    if (live == 0) return;
    // A change that committed before its lock was released sent its invalidations first.
    AcceptInvalidationMessages();
    for (int i = 0; i < noted_count; ++i) {
        const NotedLimit &limit = noted[i];
        if (limit.forgotten || get_extension_name(limit.extension) == nullptr) continue;  // extension dropped
        core::Limit now;
        if (!limit_find(limit.extension, limit.schema, limit.name, &now)) changed_meanwhile(limit, "was dropped");
        if (!same_decisions(limit.named, now)) changed_meanwhile(limit, "was redefined");
        if (limit.too_many_keys && override_invalidations() != limit.overrides_seen)
            changed_meanwhile(limit, "may have had an override changed (of more keys than are checked one by one)");
        if (limit.keys == nullptr && !limit.own_override_change && override_invalidations() != limit.overrides_seen &&
            limit_has_overrides(CallContext{limit.extension, limit.schema, InvalidOid}, limit.name))
            changed_meanwhile(limit, "had an override set");
        if (limit.keys == nullptr) continue;
        const CallContext context{limit.extension, limit.schema, InvalidOid};
        HASH_SEQ_STATUS scan;
        hash_seq_init(&scan, limit.keys);
        for (auto *key = static_cast<NotedKey *>(hash_seq_search(&scan)); key != nullptr;
             key = static_cast<NotedKey *>(hash_seq_search(&scan)))
            if (key->key != nullptr &&
                !same_decisions(key->effective, effective_limit(context, now, limit.name, key->key))) {
                hash_seq_term(&scan);
                changed_meanwhile(limit, "had the override of a key changed");
            }
    }
}

// A subtransaction's end: what it noted goes with it if it aborts (its writes are undone; keys noted in it
// stay, checked for nothing), and a forget it made is undone; if it commits, its parent takes them over.
void on_subtransaction_event(SubXactEvent event, SubTransactionId, SubTransactionId, void *) {
    const int level = GetCurrentTransactionNestLevel();
    if (event == SUBXACT_EVENT_ABORT_SUB) {
        int kept = 0;
        for (int i = 0; i < noted_count; ++i) {
            NotedLimit &limit = noted[i];
            if (limit.forgotten && limit.forgotten_level >= level) {
                limit.forgotten = false;
                limit.forgotten_level = 0;
            }
            if (limit.level >= level) continue;  // noted only in the aborted subtransaction
            noted[kept++] = limit;
        }
        noted_count = kept;
    } else if (event == SUBXACT_EVENT_COMMIT_SUB) {
        for (int i = 0; i < noted_count; ++i) {
            if (noted[i].level >= level) noted[i].level = level - 1;
            if (noted[i].forgotten_level >= level) noted[i].forgotten_level = level - 1;
        }
    }
}

void on_transaction_event(XactEvent event, void *) {
    switch (event) {
        case XACT_EVENT_PRE_COMMIT:
        case XACT_EVENT_PRE_PREPARE:
            check_noted();
            break;
        case XACT_EVENT_COMMIT:
        case XACT_EVENT_ABORT:
        case XACT_EVENT_PREPARE:
        case XACT_EVENT_PARALLEL_COMMIT:
        case XACT_EVENT_PARALLEL_ABORT:
            noted = nullptr;  // its memory went with TopTransactionContext
            noted_count = 0;
            noted_capacity = 0;
            break;
        default:
            break;
    }
}

}  // namespace

void written_limits_init() {
    RegisterXactCallback(on_transaction_event, nullptr);
    RegisterSubXactCallback(on_subtransaction_event, nullptr);
}

bool same_decisions(const core::Limit &a, const core::Limit &b) {
    const auto zone = [](const core::Limit &l) {
        return l.calendar.zone == nullptr ? "" : time_zone_name(*l.calendar.zone);
    };
    return a.algorithm == b.algorithm && a.rate == b.rate && a.period == b.period && a.capacity == b.capacity &&
           a.max_reserved == b.max_reserved && a.has_start == b.has_start && (!a.has_start || a.start == b.start) &&
           a.shards == b.shards && a.storage == b.storage && a.epoch == b.epoch && a.calendar.unit == b.calendar.unit &&
           a.calendar.count == b.calendar.count && strcmp(zone(a), zone(b)) == 0;
}

void note_written_limit(const CallContext &context, const text *name, const core::Limit &named) {
    NotedLimit *limit = find(name);
    const int level = GetCurrentTransactionNestLevel();
    if (limit != nullptr) {
        limit->level = Min(limit->level, level);
        // Noted again after a change of its own (which forgot it): from now on, under this definition.
        if (limit->forgotten) {
            limit->forgotten = false;
            limit->named = named;
            if (limit->keys != nullptr) hash_destroy(limit->keys);
            limit->keys = nullptr;
            limit->key_count = 0;
            limit->too_many_keys = false;
            limit->forgotten_level = 0;
            limit->level = level;
            limit->overrides_seen = override_invalidations();
        }
        return;
    }
    if (noted_count == noted_capacity) {
        noted_capacity = noted_capacity == 0 ? 4 : noted_capacity * 2;
        noted = static_cast<NotedLimit *>(
            noted == nullptr ? MemoryContextAlloc(TopTransactionContext, sizeof(NotedLimit) * noted_capacity)
                             : repalloc(noted, sizeof(NotedLimit) * noted_capacity));
    }
    noted[noted_count++] = NotedLimit{copied(name), context.extension,        context.schema, named, nullptr, 0,
                                      false,        override_invalidations(), false,          false, level,   0};
}

namespace {

uint64 key_hash_of(const text *key) {
    return DatumGetUInt64(
        hash_any_extended(reinterpret_cast<const unsigned char *>(VARDATA_ANY(key)), VARSIZE_ANY_EXHDR(key), 0));
}

}  // namespace

void note_written_key(const text *name, const text *key, const core::Limit &effective) {
    NotedLimit *limit = find(name);
    if (limit == nullptr || limit->forgotten || limit->too_many_keys) return;
    if (limit->keys == nullptr) {
        HASHCTL ctl;
        memset(&ctl, 0, sizeof(ctl));
        ctl.keysize = sizeof(uint64);
        ctl.entrysize = sizeof(NotedKey);
        ctl.hcxt = TopTransactionContext;
        limit->keys = hash_create("pg_ratelimit keys decided", 64, &ctl, HASH_ELEM | HASH_BLOBS | HASH_CONTEXT);
    }
    const uint64 hash = key_hash_of(key);
    bool found = false;
    auto *entry = static_cast<NotedKey *>(hash_search(limit->keys, &hash, HASH_FIND, nullptr));
    if (entry != nullptr) {
        // Another key with the same 64-bit hash (never seen, but possible): checked as if too many.
        if (entry->key != nullptr && !same_text(entry->key, key) && !limit->too_many_keys) {
            limit->too_many_keys = true;
            limit->overrides_seen = override_invalidations();
        }
        return;
    }
    if (limit->key_count == MAX_NOTED_KEYS) {
        limit->too_many_keys = true;
        limit->overrides_seen = override_invalidations();
        return;
    }
    entry = static_cast<NotedKey *>(hash_search(limit->keys, &hash, HASH_ENTER, &found));
    entry->key = copied(key);
    entry->effective = effective;
    ++limit->key_count;
}

void forget_written_limit(const text *name) {
    NotedLimit *limit = find(name);
    if (limit == nullptr || limit->forgotten) return;
    limit->forgotten = true;
    limit->forgotten_level = GetCurrentTransactionNestLevel();
}

void forget_written_key(const text *name, const text *key) {
    NotedLimit *limit = find(name);
    if (limit == nullptr) return;
    limit->own_override_change = true;
    if (limit->keys == nullptr) return;
    const uint64 hash = key_hash_of(key);
    auto *entry = static_cast<NotedKey *>(hash_search(limit->keys, &hash, HASH_FIND, nullptr));
    if (entry != nullptr) entry->key = nullptr;  // rewritten by this transaction's own change: not checked
}

}  // namespace pg_ratelimit
