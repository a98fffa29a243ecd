#include "catalog/override_hooks.hpp"

#include "catalog/override_relation.hpp"
#include "core/rescale.hpp"
#include "extension_sql.hpp"
#include "state/memory_state.hpp"

namespace pg_ratelimit {

const OverrideSet *overrides_for_definition(const CallContext &context, const text *name, bool existed,
                                            const core::Limit &limit) {
    (void)require_usable_override_table(context.extension, context.schema, RowExclusiveLock);
    if (!existed) {
        Oid types[] = {TEXTOID};
        Datum values[] = {PointerGetDatum(name)};
        extension_sql_run("DELETE FROM ONLY rate_limit_override WHERE limit_name OPERATOR(pg_catalog.=) $1", 1, types,
                          values, nullptr, false, SPI_OK_DELETE);
        return nullptr;
    }
    const OverrideSet *set = override_set_read(PointerGetDatum(name), GetLatestSnapshot(), 0);
    for (int i = 0; i < set->count; ++i)
        require_valid_override(apply_override(limit, set->values[i]), name, set->keys[i], set->key_lengths[i]);
    return set;
}

bool overrides_rewrite(const OverrideSet *set, const core::Limit &from, const core::Limit &to) {
    if (set == nullptr) return false;
    for (int i = 0; i < set->count; ++i)
        if (core::rescale_rewrites(apply_override(from, set->values[i]), apply_override(to, set->values[i])))
            return true;
    return false;
}

void overrides_rescale_memory_at_commit(const text *name, const OverrideSet *set, const core::Limit &from,
                                        const core::Limit &to, core::Rescale rule) {
    const int count = set == nullptr ? 0 : set->count;
    auto *keys = static_cast<MemoryKeyLimits *>(palloc(sizeof(MemoryKeyLimits) * (count + 1)));
    for (int i = 0; i < count; ++i)
        keys[i] = MemoryKeyLimits{set->keys[i], set->key_lengths[i], apply_override(from, set->values[i]),
                                  apply_override(to, set->values[i])};
    memory_state_rescale_with_keys_at_commit(name, from, to, rule, keys, count);
}

void overrides_drop(const CallContext &context, const text *name) {
    (void)require_usable_override_table(context.extension, context.schema, RowExclusiveLock);
    Oid types[] = {TEXTOID};
    Datum values[] = {PointerGetDatum(name)};
    extension_sql_run("DELETE FROM ONLY rate_limit_override WHERE limit_name OPERATOR(pg_catalog.=) $1", 1, types,
                      values, nullptr, false, SPI_OK_DELETE);
}

const OverrideSet *overrides_of(const CallContext &context, Datum name) {
    (void)require_usable_override_table(context.extension, context.schema, AccessShareLock);
    return override_set_read(name, GetLatestSnapshot(), 0);
}

}  // namespace pg_ratelimit
