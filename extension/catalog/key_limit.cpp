#include "catalog/key_limit.hpp"

#include "catalog/limit_cache.hpp"
#include "catalog/limit_kind.hpp"
#include "catalog/override_cache.hpp"
#include "catalog/written_limits.hpp"

namespace pg_ratelimit {

core::Limit named_rate_limit(const CallContext &context, const text *name, KeyUse use) {
    const core::Limit limit = rate_limit_lookup(context.extension, context.schema, name);
    // Checked again at commit (written_limits.hpp); memory limits are not transactional, and a standby writes
    // nothing.
    if (use == KeyUse::write && limit.storage != core::Storage::memory && !RecoveryInProgress())
        note_written_limit(context, name, limit);
    return limit;
}

core::Limit limit_for_key(const CallContext &context, const text *name, const text *key, KeyUse use) {
    return limit_for_key(context, named_rate_limit(context, name, use), name, key, use);
}

core::Limit limit_for_key(const CallContext &context, const core::Limit &named, const text *name, const text *key,
                          KeyUse use) {
    bool overridden = false;
    const core::Limit effective = effective_limit(context, named, name, key, &overridden);
    // A key of a limit with overrides: its own override is checked again at commit too.
    if (use == KeyUse::write && named.storage != core::Storage::memory && !RecoveryInProgress()) {
        if (overridden || limit_has_overrides(context, name))
            note_written_key(name, key, effective);
        else
            note_unnoted_key(name);
    }
    return effective;
}

core::Limit fresh_limit_for_key(const CallContext &context, const text *name, const text *key, KeyUse use) {
    AcceptInvalidationMessages();
    limit_cache_reset();
    override_cache_reset();
    return limit_for_key(context, name, key, use);
}

}  // namespace pg_ratelimit
