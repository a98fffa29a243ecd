#include "limit_lock.hpp"

#include "lock_waits.hpp"

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

void lock_limit_for_change(const text *name) {
    with_bounded_lock_waits(WaitFor{name, nullptr}, [&] { (void)lock_limit(name, ExclusiveLock); });
}

}  // namespace pg_ratelimit
