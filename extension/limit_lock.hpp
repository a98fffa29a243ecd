// A transaction-scoped lock per limit name, so that nothing writes a limit's keys under a definition that
// changes under it.
//
// Every change to a row of rate_limit_config (rate_limit_define, rate_limit_drop, or direct DML, through
// the table's BEFORE ROW trigger) and every rate_limit_override takes the limit's lock in ExclusiveLock
// mode; cleanup takes it in ShareLock mode before it reads the definition; a call that may write a table
// limit's keys takes it in RowShareLock mode before it decides (limit_kind.hpp: rate_limit_for_writing).
// All hold it until their transaction ends. So:
// - cleanup judges a key full with the definition that stays current while it deletes, and a redefinition
//   or drop waits for the cleanup of that limit to commit (and the reverse);
// - a redefinition waits for the transactions that wrote the limit's keys to end, and then sees every
//   row they wrote (a key's first row too, which an uncommitted insert would have hidden from it), so it
//   rewrites them all; a call that comes after it waits for it to commit and decides under the new
//   definition (having taken the lock, it accepts the invalidation the redefinition sent before releasing
//   it). No key is ever written under one definition and read under another.
// Writers do not conflict with each other, nor with cleanup. Waits are bounded (lock_waits.hpp).
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

// ExclusiveLock for a change of the limit (its row in rate_limit_config, or an override), waiting as
// lock_waits.hpp bounds it.
void lock_limit_for_change(const text *name);

// RowShareLock for a call that may write the limit's keys; true if this transaction did not hold it yet
// (the caller then accepts pending invalidations and reads the definition again).
bool lock_limit_for_writing(const text *name);

}  // namespace pg_ratelimit
