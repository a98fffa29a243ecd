#include "catalog/key_limit.hpp"

#include "catalog/limit_kind.hpp"
#include "catalog/override_cache.hpp"
#include "limit_lock.hpp"
#include "lock_waits.hpp"

namespace pg_ratelimit {

core::Limit named_rate_limit(const CallContext &context, const text *name, KeyUse use) {
    const core::Limit limit = rate_limit_lookup(context.extension, context.schema, name);
    if (use == KeyUse::read || limit.storage == core::Storage::memory || RecoveryInProgress()) return limit;
    bool first = false;
    with_bounded_lock_waits(WaitFor{name, nullptr}, [&] { first = lock_limit_for_writing(name); });
    if (!first) return limit;  // held since an earlier call of this transaction: nothing changed since
    // A redefinition that committed before the lock was granted sent its invalidation before releasing its
    // own lock: accepted now, the definition is read again (a cache hit when nothing changed).
    AcceptInvalidationMessages();
    return rate_limit_lookup(context.extension, context.schema, name);
}

core::Limit limit_for_key(const CallContext &context, const text *name, const text *key, KeyUse use) {
    return effective_limit(context, named_rate_limit(context, name, use), name, key);
}

core::Limit limit_for_key(const CallContext &context, const core::Limit &named, const text *name, const text *key) {
    return effective_limit(context, named, name, key);
}

}  // namespace pg_ratelimit
