// This backend's session leases (lease_slots.hpp takes them): which it holds, when each expires, which
// (sub)transaction took it, and what a rollback leaves in place of one.
//
// The lock manager keeps a session lock through a rollback, so the transaction callbacks here give back a
// session lease whose (sub)transaction aborts: its caller's work is undone, or the caller never saw the
// decision (a cancel or an error after the acquire returned: f62). Each such acquire leaves a marker in its
// place, which the session's next rate_limit_release of that key takes (freeing nothing, false) instead of
// another lease the session still holds: the release an error path does for the lease it believes it
// holds (f65). A marker goes at the session's next acquire of its key (a new attempt: the error path of the
// last one has run) and at the end of the transaction after the one that left it. A denied acquire leaves
// none: its caller saw the decision, and releases only what it acquired.
#pragma once

#include "core/leases.hpp"
#include "postgres_headers.hpp"

namespace pg_ratelimit {

// Registers the transaction callbacks.
void session_leases_init();

// Gives back the locks of the session leases that have expired (they count for no one, and a session that
// never releases would otherwise fill the shared lock table), and forgets those whose lock is gone
// (pg_advisory_unlock_all, DISCARD ALL).
void free_expired_session_leases(core::Micros now);

// Before a session acquire of the key `identity` searches for a slot: drops the key's markers and records
// the attempt (room made first: nothing can fail between taking a lease and recording it). If the
// (sub)transaction aborts before session_lease_taken or session_lease_not_taken, the attempt becomes a
// marker (a cancel during the search: the caller cannot know that nothing was taken).
void session_lease_attempt(uint64 identity, core::Micros period);
// The attempt took the lock `tag` in the band `band`: it is a session lease now. Cannot fail.
void session_lease_taken(const LOCKTAG &tag, std::int64_t band);
// The attempt took nothing (no slot free): its record goes.
void session_lease_not_taken();

// Releases one of this backend's live session leases of the key `identity`, one taken under `period` (the
// limit's period now, which acquires count) if it holds one: the newest taken by the innermost open
// (sub)transaction that took one (its rollback would give it back anyway: f63), else the oldest. A marker
// of the key is taken first instead (false). False if it holds none (transaction leases are not released
// early: they end with their transaction). A lease of another period is left from a limit dropped and
// defined again: it counts for no one, but expires only by its own period.
bool lease_release(uint64 identity, core::Micros period);

}  // namespace pg_ratelimit
