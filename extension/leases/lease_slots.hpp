// Concurrency limits (leases) in PostgreSQL's lock manager: the lock tags of a key's slots, the search for
// a free slot (this backend's own session leases: session_leases.hpp).
//
// Why the lock manager: it already releases what a lease needs released, and nothing else can. A
// transaction lease is a transaction-level lock, released at COMMIT, ROLLBACK (and ROLLBACK TO SAVEPOINT
// for one taken after the savepoint), handed to the prepared transaction by PREPARE TRANSACTION and
// released when that commits or rolls back; a session lease is a session-level lock, released by
// rate_limit_release, at session end (also pg_advisory_unlock_all() and DISCARD ALL, which release every
// session-level advisory lock), and by a rollback of the (sub)transaction that took it
// (session_leases.hpp: the lock manager keeps session locks through a rollback). A backend that dies
// (pg_terminate_backend, a crash) has its locks released by the lock manager, and a crash restart empties the lock
// table: a lease can never leak. Nothing is written (no WAL, no table) and no shared_preload_libraries is needed. A
// standby refuses acquires: its lock manager cannot see the primary's leases.
//
// The tags are advisory lock tags (LOCKTAG_ADVISORY): field1 the database OID, field2/field3 the 64 bits
// of core::lease_slot_tag, field4 one of our markers below. SQL's advisory locks use field4 = 1 (bigint
// keys) and 2 (two integer keys), so no pg_advisory_lock call can ever take or block one of our tags. In
// pg_locks they are rows with locktype = 'advisory', objsubid = the marker, pid = the holder.
//
// Exactness: the acquires of one key are serialized by a short mutex, a transaction-level lock on the
// key's own tag (marker LEASE_MUTEX_MARKER) that is waited for, held only during the slot search (which
// never waits) and released before the call returns. So two backends can never both see the last slot
// free; the probes and the take happen under it. Leases are released without it (an unlock only frees).
// Slot tags are only ever taken conditionally: no acquire waits on a slot, and no deadlock can involve one.
#pragma once

#include "core/leases.hpp"
#include "limit_lock.hpp"
#include "postgres_headers.hpp"

namespace pg_ratelimit {

inline constexpr uint16 LEASE_TRANSACTION_MARKER = 21069;  // pg_locks.objsubid of a transaction lease
inline constexpr uint16 LEASE_SESSION_MARKER = 21070;      // ... of a session lease
inline constexpr uint16 LEASE_MUTEX_MARKER = 21071;        // ... of a key's mutex, held during an acquire
// Distinct from the limit lock's (21068): pg_locks must tell a lease from a define's or cleanup's lock.
static_assert(LEASE_TRANSACTION_MARKER > LIMIT_LOCK_MARKER && LEASE_MUTEX_MARKER > LIMIT_LOCK_MARKER);

enum class LeaseScope { transaction, session };

// Takes one of the `slots` slots of the key `identity` (core::lease_identity) if one is free, for the
// scope given; session leases expire after `period` (core/leases.hpp: time bands). Returns the decision
// (core::lease_outcome). ERROR 53200 if the lock table is full (nothing is then taken).
core::Outcome lease_acquire(uint64 identity, int slots, core::Micros period, LeaseScope scope);

}  // namespace pg_ratelimit
