// A transaction-scoped lock per limit name, so that nothing writes a limit's keys under a definition that
// changes under it.
//
// Every change to a row of rate_limit_config (rate_limit_define, rate_limit_drop, or direct DML, through
// the table's BEFORE ROW trigger) and every rate_limit_override takes the limit's lock in ExclusiveLock
// mode; cleanup takes it in ShareLock mode before it reads the definition; a transaction that decided keys
// of a table limit takes it in RowShareLock when it commits, to check that the definition it decided under
// is still in force (written_limits.hpp). All hold it until their transaction ends. So:
// - cleanup judges a key full with the definition that stays current while it deletes, and a redefinition
//   or drop waits for the cleanup of that limit to commit (and the reverse);
// - a change and a committing writer take turns: either the writer commits first, and the change (which
//   reads with a snapshot taken after its lock) sees and rewrites its rows, or the change commits first,
//   and the writer, which then sees it, fails with 40001 and is retried under the new definition.
// Writers do not conflict with each other, nor with cleanup; they hold the lock only while they commit, so
// a session left idle in a transaction holds up no change. Waits are bounded (lock_waits.hpp).
//
// It is an advisory lock of the database (pg_locks: locktype 'advisory', objsubid 21068 ('RL'), classid
// and objid a 64-bit hash of the name), distinct from the 1 and 2 that pg_advisory_lock functions use;
// two names that hash alike merely share a lock.
#pragma once

#include "postgres_headers.hpp"

namespace pg_ratelimit {
// field4 of the limit lock's advisory tag (pg_locks.objsubid): "RL". Leases use the next three values
// (lease_slots.hpp).
inline constexpr uint16 LIMIT_LOCK_MARKER = 0x524C;

// ShareLock or ExclusiveLock; returns false instead of waiting when `wait` is false and the lock is taken.
bool lock_limit(const text *name, LOCKMODE mode, bool wait = true);

// Whether this transaction holds the limit's lock in `mode`. (A change takes it in ExclusiveLock through
// catalog/written_limits.hpp's lock_limit_for_change.)
bool limit_lock_held(const text *name, LOCKMODE mode);

}  // namespace pg_ratelimit
