#include "limit_lock.hpp"

namespace pg_ratelimit {

bool lock_limit(const text *name, LOCKMODE mode, bool wait) {
    const uint64 hash = DatumGetUInt64(
        hash_any_extended(reinterpret_cast<const unsigned char *>(VARDATA_ANY(name)), VARSIZE_ANY_EXHDR(name), 0));
    LOCKTAG tag;
    SET_LOCKTAG_ADVISORY(tag, MyDatabaseId, static_cast<uint32>(hash >> 32), static_cast<uint32>(hash),
                         LIMIT_LOCK_MARKER);
    return LockAcquire(&tag, mode, false, !wait) != LOCKACQUIRE_NOT_AVAIL;
}

}  // namespace pg_ratelimit
