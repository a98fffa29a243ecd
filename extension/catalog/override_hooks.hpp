// What rate_limit_define, rate_limit_drop and rate_limit_cleanup do about per-key overrides
// (override_store.hpp). Each runs inside the caller's extension_sql_begin / _end (one SPI connection: the
// sets returned point into its results).
#pragma once

#include "call_context.hpp"
#include "catalog/override_store.hpp"
#include "core/limit.hpp"
#include "core/rescale.hpp"
#include "postgres_headers.hpp"

namespace pg_ratelimit {

// After rate_limit_define wrote `limit`: every override of the limit must make a valid limit with it
// (otherwise ERROR 22023 naming the key, and the whole definition is undone); a limit new to the table
// first loses the overrides a deletion by hand left behind (rate_limit_drop deletes them itself). Returns
// the limit's overrides (read with the latest snapshot: a concurrent rate_limit_override waits for the
// definition's row lock, and one that committed before is seen).
const OverrideSet *overrides_for_definition(const CallContext &context, const text *name, bool existed,
                                            const core::Limit &limit);

// Whether carrying the keys from `from` to `to` rewrites the state of a key with an override (its own
// limits change even where the limit's keys stay as they are: a capacity left NULL follows the limit's
// rate and capacity).
bool overrides_rewrite(const OverrideSet *set, const core::Limit &from, const core::Limit &to);

// A redefined memory limit's entries carried over at commit, each key with an override between its own
// limits.
void overrides_rescale_memory_at_commit(const text *name, const OverrideSet *set, const core::Limit &from,
                                        const core::Limit &to, core::Rescale rule);

// rate_limit_drop: the limit's overrides go with it.
void overrides_drop(const CallContext &context, const text *name);

// rate_limit_cleanup: the limit's overrides, with the latest snapshot (cleanup holds the limit's lock,
// which every rate_limit_override takes).
const OverrideSet *overrides_of(const CallContext &context, Datum name);

}  // namespace pg_ratelimit
