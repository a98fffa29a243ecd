#include "limit_lock.hpp"

#include "pg_compat.hpp"

namespace pg_ratelimit {

namespace {

LOCKTAG limit_tag(const text *name) {
    const uint64 hash = DatumGetUInt64(
        hash_any_extended(reinterpret_cast<const unsigned char *>(VARDATA_ANY(name)), VARSIZE_ANY_EXHDR(name), 0));
    LOCKTAG tag;
    SET_LOCKTAG_ADVISORY(tag, MyDatabaseId, static_cast<uint32>(hash >> 32), static_cast<uint32>(hash),
                         LIMIT_LOCK_MARKER);
    return tag;
}

}  // namespace

bool lock_limit(const text *name, LOCKMODE mode, bool wait) {
    const LOCKTAG tag = limit_tag(name);
    return LockAcquire(&tag, mode, false, !wait) != LOCKACQUIRE_NOT_AVAIL;
}

bool limit_lock_held(const text *name, LOCKMODE mode) {
    const LOCKTAG tag = limit_tag(name);
    return pg_compat::lock_held_by_me(&tag, mode);
}

}  // namespace pg_ratelimit
