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
    Oid reader;  // the role the extension's functions run as, which reads the limit and its overrides
    core::Limit named;
    HTAB *keys;  // NotedKey by hash, created on the limit's first key
    int key_count;
    bool too_many_keys;
    bool unnoted_keys;  // keys were decided while the limit had no overrides (note_unnoted_key)
    // override_invalidations() when the limit was noted (keys decided while it had no overrides are not
    // noted: if one was set meanwhile, which keys it concerns is unknown), or when too_many_keys was set.
    uint64 overrides_seen;
    // Subtransaction nest levels: the innermost open one the limit's notes need (they go with it if it
    // aborts: its writes are undone), and the one whose change of the limit checked them (0: none), holding
    // the limit's lock from then on: nothing is left to check at commit, unless that subtransaction aborts
    // (its lock goes with it).
    int level;
    int checked_level;
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

// What the limit's keys were decided under, compared with what is in force: ERROR 40001 on a difference.
// Reads as the role the extension's functions run as (the committing role may not read the override table),
// restricted as a SECURITY DEFINER function is.
void check_limit(const NotedLimit &limit) {
    if (get_extension_name(limit.extension) == nullptr) return;  // the extension was dropped
    Oid user = InvalidOid;
    int security = 0;
    GetUserIdAndSecContext(&user, &security);
    SetUserIdAndSecContext(limit.reader, security | SECURITY_LOCAL_USERID_CHANGE | SECURITY_RESTRICTED_OPERATION);
    // On an error, the transaction's abort restores the user and context.
    const CallContext context{limit.extension, limit.schema, InvalidOid};
    core::Limit now;
    if (!limit_find(limit.extension, limit.schema, limit.name, &now)) changed_meanwhile(limit, "was dropped");
    if (!same_decisions(limit.named, now)) changed_meanwhile(limit, "was redefined");
    if (limit.too_many_keys && override_invalidations() != limit.overrides_seen)
        changed_meanwhile(limit, "may have had an override changed (of more keys than are checked one by one)");
    if (limit.unnoted_keys && override_invalidations() != limit.overrides_seen &&
        limit_has_overrides(context, limit.name))
        changed_meanwhile(limit, "had an override set");
    if (limit.keys != nullptr) {
        HASH_SEQ_STATUS scan;
        hash_seq_init(&scan, limit.keys);
        for (auto *key = static_cast<NotedKey *>(hash_seq_search(&scan)); key != nullptr;
             key = static_cast<NotedKey *>(hash_seq_search(&scan)))
            if (!same_decisions(key->effective, effective_limit(context, now, limit.name, key->key))) {
                hash_seq_term(&scan);
                changed_meanwhile(limit, "had the override of a key changed");
            }
    }
    SetUserIdAndSecContext(user, security);
}

// Before COMMIT or PREPARE (see the header): the lock of every noted limit not checked by a change of this
// transaction, taken for the commit, then what each was decided under compared with what is in force.
void check_noted() {
    int unchecked = 0;
    for (int i = 0; i < noted_count; ++i) {
        if (noted[i].checked_level > 0) continue;
        ++unchecked;
        const text *name = noted[i].name;
        with_bounded_lock_waits(WaitFor{name, nullptr}, [&] { (void)lock_limit(name, RowShareLock); });
    }
    if (unchecked == 0) return;
    // A change that committed before its lock was released sent its invalidations first.
    AcceptInvalidationMessages();
    for (int i = 0; i < noted_count; ++i)
        if (noted[i].checked_level == 0) check_limit(noted[i]);
}

// A subtransaction's end: what it noted goes with it if it aborts (its writes are undone; keys noted in it
// stay, checked for nothing), and so does the check of a change made in it (whose lock it releases); if it
// commits, its parent takes them over.
void on_subtransaction_event(SubXactEvent event, SubTransactionId, SubTransactionId, void *) {
    const int level = GetCurrentTransactionNestLevel();
    if (event == SUBXACT_EVENT_ABORT_SUB) {
        int kept = 0;
        for (int i = 0; i < noted_count; ++i) {
            NotedLimit &limit = noted[i];
            if (limit.checked_level >= level) limit.checked_level = 0;
            if (limit.level >= level) continue;  // noted only in the aborted subtransaction
            noted[kept++] = limit;
        }
        noted_count = kept;
    } else if (event == SUBXACT_EVENT_COMMIT_SUB) {
        for (int i = 0; i < noted_count; ++i) {
            if (noted[i].level >= level) noted[i].level = level - 1;
            if (noted[i].checked_level >= level) noted[i].checked_level = level - 1;
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
        return;
    }
    // A change of the limit made by this transaction holds its lock: nothing can change it before the
    // commit (and a subtransaction that took the lock is still open: an abort of it undoes this call too).
    if (limit_lock_held(name, ExclusiveLock)) return;
    if (noted_count == noted_capacity) {
        noted_capacity = noted_capacity == 0 ? 4 : noted_capacity * 2;
        noted = static_cast<NotedLimit *>(
            noted == nullptr ? MemoryContextAlloc(TopTransactionContext, sizeof(NotedLimit) * noted_capacity)
                             : repalloc(noted, sizeof(NotedLimit) * noted_capacity));
    }
    NotedLimit &entry = noted[noted_count++];
    entry = NotedLimit{};
    entry.name = copied(name);
    entry.extension = context.extension;
    entry.schema = context.schema;
    entry.reader = GetUserId();  // inside the SECURITY DEFINER function: its owner
    entry.named = named;
    entry.overrides_seen = override_invalidations();
    entry.level = level;
}

namespace {

uint64 key_hash_of(const text *key) {
    return DatumGetUInt64(
        hash_any_extended(reinterpret_cast<const unsigned char *>(VARDATA_ANY(key)), VARSIZE_ANY_EXHDR(key), 0));
}

}  // namespace

void note_written_key(const text *name, const text *key, const core::Limit &effective) {
    NotedLimit *limit = find(name);
    if (limit == nullptr || limit->checked_level > 0 || limit->too_many_keys) return;
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
        if (!same_text(entry->key, key) && !limit->too_many_keys) {
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

void note_unnoted_key(const text *name) {
    NotedLimit *limit = find(name);
    if (limit != nullptr) limit->unnoted_keys = true;
}

void lock_limit_for_change(const text *name) {
    with_bounded_lock_waits(WaitFor{name, nullptr}, [&] { (void)lock_limit(name, ExclusiveLock); });
    NotedLimit *limit = find(name);
    if (limit == nullptr || limit->checked_level > 0) return;
    // The changes committed before the lock was granted sent their invalidations first.
    AcceptInvalidationMessages();
    check_limit(*limit);
    limit->checked_level = GetCurrentTransactionNestLevel();
}

}  // namespace pg_ratelimit
