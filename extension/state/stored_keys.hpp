// What a change of a limit does to the keys stored in its tables (rate_limit_define, rate_limit_drop,
// rate_limit_override, rate_limit_override_drop): lock them, carry them over to the new definition, or
// delete them. Memory keys are carried over when the change commits instead (memory_state.hpp).
//
// Every statement here reads with a snapshot taken when it runs, not the transaction's: at REPEATABLE
// READ and SERIALIZABLE, a change that waited for the transactions holding its keys must still see what
// they committed (extension_sql.hpp). A change locks its keys' rows before it takes the limit's lock
// (lock_keys_and_limit): so it waits for the transactions holding its keys without holding that lock, and
// the limit's writers, who take it to commit, are never held up by a change that is still waiting. Run
// between extension_sql_begin and _end.
#pragma once

#include "call_context.hpp"
#include "catalog/override_store.hpp"
#include "core/limit.hpp"
#include "core/rescale.hpp"
#include "postgres_headers.hpp"

namespace pg_ratelimit {

// Locks the rows of the limit's keys (of `key` only, if given) in both state tables, then the limit's lock
// for a change (catalog/written_limits.hpp), and returns holding both, no row of the keys held by anyone
// else. Never waits for a transaction holding a key with the limit's lock held (that transaction needs it
// to commit), nor longer than a moment with other keys' rows held (their writers would wait): a longer
// hold lets everything go, is waited for alone (a bounded wait: lock_waits.hpp, ERROR 55P03), and the
// change tries again; ERROR 55P03 if other keys are held every time. At REPEATABLE READ and SERIALIZABLE, a
// row its holder updated while the change waited is locked again, not a serialization failure.
void lock_keys_and_limit(const CallContext &context, const text *name, const text *key);

// Carries every stored key of a table limit from `from` to `to` (core/rescale.hpp), each key with an
// override between its own two limits.
void rescale_stored_keys(const CallContext &context, const text *name, const core::Limit &from, const core::Limit &to,
                         core::Rescale rule, const OverrideSet *overrides);

// The same for the rows of one key (an override set, changed or dropped); `reset` deletes them.
void rescale_stored_key(const CallContext &context, const text *name, const text *key, const core::Limit &from,
                        const core::Limit &to, core::Rescale rule);

// Deletes every stored key of the limit from both state tables.
void delete_stored_keys(const CallContext &context, const text *name);

}  // namespace pg_ratelimit
