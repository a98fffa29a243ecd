// The state of limits defined with storage => 'memory': a fixed-size table in shared memory
// (core/memory_table.hpp), one per server.
//
// - Needs shared_preload_libraries = 'pg_ratelimit' (shared memory is sized when the server starts);
//   without it, defining or using a memory limit raises 55000 with a hint, and nothing else changes.
// - Not transactional: a decision takes effect when it is made, and a rollback does not give units
//   back. It takes no transaction id, snapshot, table lock or WAL, so it works in read-only transactions
//   and on hot standbys, where each server keeps its own counts.
// - pg_ratelimit.memory_keys entries, in partitions of their own lock each: a lookup holds its
//   partition's lock in shared mode and the entry's own lock while it decides, so calls on different keys
//   never wait for each other; a new key takes its partition's lock exclusively for the insert.
// - When a partition is full, inserting evicts a batch of entries: first those back at full capacity
//   (equivalent to absent ones, nothing is lost), then the least recently used (those keys start over
//   at full capacity: counted in rate_limit_storage, and a WARNING says so once a minute at most).
// - Saved to a file at a clean shutdown and loaded at the next start; after a crash every key starts
//   at full capacity.
// - A limit's entries are removed when a transaction that drops it, or redefines its algorithm, shards
//   or storage, commits (from rate_limit_config's row trigger); entries also carry the (algorithm,
//   shards) they were made under, and an entry of another definition counts as absent.
#pragma once

#include "core/limit.hpp"
#include "core/rescale.hpp"
#include "postgres_headers.hpp"

namespace pg_ratelimit {

struct StateTarget;

// From _PG_init: the setting, and the shared memory when loaded by shared_preload_libraries.
void memory_state_init();

// ERROR 55000 unless the server was started with the library preloaded.
void require_memory_state();

// Removes every shard's entry of the key (rate_limit_reset).
void memory_state_reset(const StateTarget &target);

// Removes the entries of the limit that are back at full capacity (rate_limit_cleanup); returns how many.
int64 memory_state_sweep(const text *limit_name, const core::Limit &limit);

// Removes every entry of the limit when the current transaction commits (nothing if it aborts).
void memory_state_forget_at_commit(const text *limit_name);

// Carries every entry of the limit over from `from` to `to` (core/rescale.hpp) when the current
// transaction commits (nothing if it aborts). Not on a standby, where no definition changes: there memory
// keys keep their numbers as they are.
void memory_state_rescale_at_commit(const text *limit_name, const core::Limit &from, const core::Limit &to,
                                    core::Rescale rule);

// A change of the limit's definition by hand (UPDATE rate_limit_config) from `from` to `to`: at commit every
// entry keeps its numbers, read under `to` from then on, and when it is full again is recomputed under
// `to` (never earlier than before).
void memory_state_refresh_at_commit(const text *limit_name, const core::Limit &from, const core::Limit &to);

// rate_limit_define carries the keys over itself: the refresh its row's change asked for goes (only that
// one: an UPDATE by hand earlier in the transaction still relabels the entries made before it). `since`:
// memory_state_changes_queued() before the row's change.
int memory_state_changes_queued();
void memory_state_cancel_refresh(const text *limit_name, int since);

// Waits while a change of the limit is committing (its entries being carried over to the new definition).
void memory_wait_for_change(const text *limit_name);

// --- Per-key tiers (override_store.hpp) ---
// A key carried over between limits of its own: a key with an override of its limit.
struct MemoryKeyLimits {
    const char *key;
    int key_length;
    core::Limit from;
    core::Limit to;
};
// As memory_state_rescale_at_commit, every entry of the limit carried from `from` to `to`, except the
// keys given, each carried between its own two limits (a redefinition of a limit with overrides).
void memory_state_rescale_with_keys_at_commit(const text *limit_name, const core::Limit &from, const core::Limit &to,
                                              core::Rescale rule, const MemoryKeyLimits *keys, int key_count);
// Only the entries of the keys given, each carried between its own two limits (an override set, changed
// or dropped); `reset` removes them (the keys start full).
void memory_state_rescale_keys_at_commit(const text *limit_name, core::Rescale rule, const MemoryKeyLimits *keys,
                                         int key_count);

}  // namespace pg_ratelimit
