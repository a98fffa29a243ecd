#include "leases/session_leases.hpp"

#include <initializer_list>
#include "pg_compat.hpp"

#include "clock.hpp"

namespace pg_ratelimit {
namespace {

enum class Entry : uint8 {
    lease,    // a session lease held (a session-level lock)
    attempt,  // a session acquire searching for a slot, for the duration of the call
    marker,   // a lease that holds no slot (session_leases.hpp)
};

// This backend's entries, oldest first (for rate_limit_release), in TopMemoryContext.
struct SessionLease {
    uint64 identity;
    LOCKTAG tag;          // a lease's lock
    std::int64_t band;    // the time band it was taken in, which with its period says when it expires
    core::Micros period;  // the period it was taken under
    int level;            // the nesting level of the open (sub)transaction that took it; 0 once committed
    int release_level;    // that of the open (sub)transaction that released it; 0 if none did
    Entry kind;
};
SessionLease *entries = nullptr;
int entry_count = 0;
int entry_room = 0;
int marker_count = 0;

void forget(int index) {
    if (entries[index].kind == Entry::marker) --marker_count;
    for (int i = index + 1; i < entry_count; ++i) entries[i - 1] = entries[i];
    --entry_count;
}

// Whether an entry no longer counts at `now` (its band is no longer a live one).
bool expired(const SessionLease &entry, core::Micros now) {
    return entry.band <= core::lease_bands(entry.period, now).current - core::LEASE_LIVE_BANDS;
}

// Room for one more entry.
void reserve_entry() {
    if (entry_count < entry_room) return;
    const int room = entry_room == 0 ? 16 : entry_room * 2;
    const Size bytes = sizeof(SessionLease) * static_cast<Size>(room);
    entries = static_cast<SessionLease *>(entries == nullptr ? MemoryContextAlloc(TopMemoryContext, bytes)
                                                             : repalloc(entries, bytes));
    entry_room = room;
}

void make_marker(SessionLease *entry) {
    entry->kind = Entry::marker;
    entry->level = 0;  // markers are not transactional: they stand for what a rollback or a shadow pass left
    entry->release_level = 0;
    ++marker_count;
}

// Whether this backend holds a session lease of the key `identity` (one with a release pending too: a
// rollback may undo that release): the only case where a marker of the key matters (without one, a
// release of the key frees nothing anyway).
bool holds_lease(uint64 identity) {
    for (int i = 0; i < entry_count; ++i)
        if (entries[i].kind == Entry::lease && entries[i].identity == identity) return true;
    return false;
}

// Drops the markers that protect no lease (f68: a loop of failures on keys the session holds no lease of
// leaves none), then, beyond MAX_MARKERS, the oldest (f72: markers beside a held lease are the last to go).
void trim_markers() {
    if (marker_count == 0) return;
    int kept = 0;
    for (int i = 0; i < entry_count; ++i) {
        if (entries[i].kind == Entry::marker && entries[i].release_level == 0 && !holds_lease(entries[i].identity)) {
            --marker_count;
            continue;
        }
        entries[kept++] = entries[i];
    }
    entry_count = kept;
    int excess = marker_count - MAX_MARKERS;
    if (excess <= 0) return;
    kept = 0;
    for (int i = 0; i < entry_count; ++i) {
        if (excess > 0 && entries[i].kind == Entry::marker && entries[i].release_level == 0) {
            --excess;
            --marker_count;
            continue;
        }
        entries[kept++] = entries[i];
    }
    entry_count = kept;
}

// The (sub)transaction at nesting level `level` aborted: its releases are undone, and the leases and
// attempts it (or a subtransaction of it) made give their locks back and become markers, except those their
// caller had released (it believes it holds none of them). Called from abort callbacks: nothing here can
// fail (a lease whose lock is gone already is only marked).
void roll_back(int level) {
    int kept = 0;
    for (int i = 0; i < entry_count; ++i) {
        SessionLease entry = entries[i];
        if (entry.kind != Entry::marker && entry.level >= level) {
            if (entry.kind == Entry::lease && pg_compat::lock_held_by_me(&entry.tag, ExclusiveLock))
                LockRelease(&entry.tag, ExclusiveLock, true);
            if (entry.release_level > 0) continue;  // taken and released: nothing left
            make_marker(&entry);
        } else if (entry.release_level >= level) {
            entry.release_level = 0;
        }
        entries[kept++] = entry;
    }
    entry_count = kept;
    trim_markers();
}

// The transaction committed (or was prepared): its releases give their locks back, and its leases are the
// session's now.
void commit() {
    for (int i = entry_count - 1; i >= 0; --i) {
        SessionLease &entry = entries[i];
        if (entry.release_level > 0) {  // a lease released, or a marker a release took
            const LOCKTAG tag = entry.tag;
            const bool lease = entry.kind == Entry::lease;
            forget(i);
            if (lease && pg_compat::lock_held_by_me(&tag, ExclusiveLock)) LockRelease(&tag, ExclusiveLock, true);
        } else if (entry.kind == Entry::attempt) {
            forget(i);  // cannot outlive its call; never left behind
        } else {
            entry.level = 0;
        }
    }
}

void on_transaction_end(XactEvent event, void *) {
    if (entry_count == 0) return;
    if (event == XACT_EVENT_ABORT || event == XACT_EVENT_PARALLEL_ABORT)
        roll_back(1);
    else if (event == XACT_EVENT_COMMIT || event == XACT_EVENT_PARALLEL_COMMIT || event == XACT_EVENT_PREPARE)
        commit();
    else
        return;                                 // the PRE_ events
    if (entry_count == 0 && entry_room > 64) {  // a burst of entries gone: its memory too
        pfree(entries);
        entries = nullptr;
        entry_room = 0;
    }
}

void on_subtransaction_end(SubXactEvent event, SubTransactionId, SubTransactionId, void *) {
    if (entry_count == 0) return;
    const int level = GetCurrentTransactionNestLevel();  // the ending subtransaction's
    if (event == SUBXACT_EVENT_ABORT_SUB) {
        roll_back(level);
    } else if (event == SUBXACT_EVENT_COMMIT_SUB) {
        for (int i = 0; i < entry_count; ++i) {
            if (entries[i].level >= level) entries[i].level = level - 1;
            if (entries[i].release_level >= level) entries[i].release_level = level - 1;
        }
    }
}

void append(uint64 identity, core::Micros period, core::Micros now, Entry kind) {
    reserve_entry();
    const std::int64_t band = core::lease_bands(period, now).current;
    entries[entry_count++] =
        SessionLease{identity, LOCKTAG{}, band, period, GetCurrentTransactionNestLevel(), 0, Entry::attempt};
    if (kind == Entry::marker) {
        make_marker(&entries[entry_count - 1]);
        trim_markers();
    }
}

}  // namespace

void session_leases_init() {
    RegisterXactCallback(on_transaction_end, nullptr);
    RegisterSubXactCallback(on_subtransaction_end, nullptr);
}

void free_expired_session_leases(core::Micros now) {
    for (int i = entry_count - 1; i >= 0; --i) {
        const SessionLease entry = entries[i];
        if (entry.kind == Entry::marker) {
            if (expired(entry, now)) forget(i);
        } else if (entry.kind == Entry::lease) {
            if (!pg_compat::lock_held_by_me(&entry.tag, ExclusiveLock)) {
                forget(i);
            } else if (expired(entry, now)) {
                forget(i);
                LockRelease(&entry.tag, ExclusiveLock, true);
            }
        }
    }
}

void session_lease_attempt(uint64 identity, core::Micros period, core::Micros now) {
    if (marker_count > 0)
        for (int i = entry_count - 1; i >= 0; --i)
            if (entries[i].kind == Entry::marker && entries[i].release_level == 0 && entries[i].identity == identity)
                forget(i);  // one a release of the open transaction took stays: a rollback gives it back (f73)
    append(identity, period, now, Entry::attempt);
}

void session_lease_taken(const LOCKTAG &tag, std::int64_t band) {
    SessionLease &entry = entries[entry_count - 1];
    Assert(entry.kind == Entry::attempt);
    entry.kind = Entry::lease;
    entry.tag = tag;
    entry.band = band;
}

void session_lease_not_taken() {
    Assert(entry_count > 0 && entries[entry_count - 1].kind == Entry::attempt);
    --entry_count;
}

void session_lease_shadow_pass(uint64 identity, core::Micros period, core::Micros now) {
    append(identity, period, now, Entry::marker);
}

bool lease_release(uint64 identity, core::Micros period) {
    free_expired_session_leases(clock_now());  // an expired lease is not the one to release: a live one is
    // A marker first, taken at commit as a lease is released (f71: a release rolled back and retried takes
    // the same marker again).
    if (marker_count > 0)
        for (int i = 0; i < entry_count; ++i) {
            SessionLease &marker = entries[i];
            if (marker.kind != Entry::marker || marker.release_level > 0 || marker.identity != identity) continue;
            marker.release_level = GetCurrentTransactionNestLevel();
            return false;
        }
    // First a lease of the current period (the one acquires count), then any other.
    for (const bool any_period : {false, true}) {
        int chosen = -1;
        for (int i = 0; i < entry_count; ++i) {
            const SessionLease &lease = entries[i];
            if (lease.kind != Entry::lease || lease.release_level > 0 || lease.identity != identity ||
                (!any_period && lease.period != period))
                continue;
            // Oldest first; a later one wins only if it was taken by a (sub)transaction still open, as deep
            // as the chosen one's or deeper.
            if (chosen < 0 || (lease.level > 0 && lease.level >= entries[chosen].level)) chosen = i;
        }
        if (chosen < 0) continue;
        entries[chosen].release_level = GetCurrentTransactionNestLevel();  // the lock goes at commit
        return true;
    }
    return false;
}

}  // namespace pg_ratelimit
