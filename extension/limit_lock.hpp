// A transaction-scoped lock per limit name, so that rate_limit_cleanup never works with a definition that
// changes under it.
//
// Every change to a row of rate_limit_config (rate_limit_define, rate_limit_drop, or direct DML, through
// the table's BEFORE ROW trigger) takes the limit's lock in ExclusiveLock mode; cleanup takes it in
// ShareLock mode before it reads the definition, and both hold it until their transaction ends. So cleanup
// judges a key full with the definition that stays current while it deletes, and a redefinition or drop
// waits for the cleanup of that limit to commit (and the reverse). Requests do not take it.
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

}  // namespace pg_ratelimit
