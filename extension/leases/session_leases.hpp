// This backend's session leases (lease_slots.hpp takes them): which it holds, when each expires, which
// open (sub)transaction took or released it, and the markers that stand in for leases that hold no slot.
//
// Session leases follow the transaction as the rest of the extension does. The lock manager keeps a
// session lock through a rollback, so the transaction callbacks here give back a session lease whose
// (sub)transaction aborts: its caller's work is undone, or the caller never saw the decision (a cancel or
// an error after the acquire returned: f62). A release takes effect when its transaction commits (the lock
// is given back then), and a rollback undoes it: a transaction retried after a serialization failure
// releases once (f66). Outside a transaction block, both happen at once.
//
// A marker is a lease that holds no slot: what a session acquire leaves when a rollback gives its lease
// back (or it failed itself, a cancel during the search), and what a shadow pass without a slot leaves.
// The session's next rate_limit_release of that key takes a marker first (false) instead of another lease
// the session holds: the release an error path, or a shadow pass's caller, does for the lease it believes
// it holds (f65, f69). A marker goes when a release takes it, at the session's next session acquire of its
// key (a new attempt: the error path of the last one has run), or after the limit's period, as the lease
// would have, and at once if the session holds no lease of its key (it protects nothing then: f68, a
// loop of failures on many keys leaves none). A release takes a marker at commit, as it frees a lease
// (f71). A session keeps at most MAX_MARKERS of them, the oldest going first (f72: markers beside a held
// lease are all that count).
#pragma once

#include "core/leases.hpp"
#include "postgres_headers.hpp"

namespace pg_ratelimit {

inline constexpr int MAX_MARKERS = 1000;

// Registers the transaction callbacks.
void session_leases_init();

// Gives back the locks of the session leases that have expired (they count for no one, and a session that
// never releases would otherwise fill the shared lock table), and forgets those whose lock is gone
// (pg_advisory_unlock_all, DISCARD ALL) and the expired markers.
void free_expired_session_leases(core::Micros now);

// Before a session acquire of the key `identity` searches for a slot: drops the key's markers (but those a
// release of the open transaction took, which its rollback gives back) and records the attempt (room made
// first: nothing can fail between taking a lease and recording it). If the (sub)transaction aborts before
// session_lease_taken or session_lease_not_taken, the attempt becomes a marker (a cancel during the
// search: the caller cannot know that nothing was taken).
void session_lease_attempt(uint64 identity, core::Micros period, core::Micros now);
// The attempt took the lock `tag` in the band `band`: it is a session lease now. Cannot fail.
void session_lease_taken(const LOCKTAG &tag, std::int64_t band);
// The attempt took nothing (no slot free): its record goes. A denied caller saw the decision and releases
// nothing.
void session_lease_not_taken();
// A shadow limit let a session acquire through without a slot: a marker, which the caller's release takes.
void session_lease_shadow_pass(uint64 identity, core::Micros period, core::Micros now);

// Releases one of this backend's live session leases of the key `identity`, at the commit of the current
// transaction: a marker of the key first (false), else a lease taken under `period` (the limit's period
// now, which acquires count) if it holds one, else any: the newest taken by the innermost open
// (sub)transaction that took one (f63), else the oldest. True if a lease is to go; false if it holds none
// (transaction leases are not released early: they end with their transaction).
bool lease_release(uint64 identity, core::Micros period);

}  // namespace pg_ratelimit
