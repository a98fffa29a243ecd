#include "session_leases.hpp"

#include <initializer_list>

#include "clock.hpp"

namespace pg_ratelimit {
namespace {

enum class Entry : uint8 {
    lease,    // a session lease held (a session-level lock)
    attempt,  // a session acquire searching for a slot, for the duration of the call
    marker,   // what a lease or attempt rolled back left: the next release of its key takes it
};

// This backend's entries, oldest first (for rate_limit_release), in TopMemoryContext.
struct SessionLease {
    uint64 identity;
    LOCKTAG tag;          // a lease's lock
    std::int64_t band;    // a lease's time band, which with its period says when it expires
    core::Micros period;  // the period it was taken under
    int level;            // the nesting level of the open (sub)transaction that took it; 0 once committed
    uint64 left_in;       // a marker: the value of transactions_ended when it was left
    Entry kind;
};
SessionLease *entries = nullptr;
int entry_count = 0;
int entry_room = 0;
uint64 transactions_ended = 0;  // top-level transactions ended in this session (while it had entries)

void forget(int index) {
    for (int i = index + 1; i < entry_count; ++i) entries[i - 1] = entries[i];
    --entry_count;
}

// Whether a session lease no longer counts at `now` (its band is no longer a live one).
bool expired(const SessionLease &lease, core::Micros now) {
    return lease.band <= core::lease_bands(lease.period, now).current - core::LEASE_LIVE_BANDS;
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

// The (sub)transaction at nesting level `level` aborted: the leases and attempts it (or a subtransaction
// of it) made become markers, and the leases' locks are given back. Called from abort callbacks: nothing
// here can fail (a lease whose lock is gone already is only marked).
void roll_back(int level) {
    for (int i = 0; i < entry_count; ++i) {
        SessionLease &entry = entries[i];
        if (entry.kind == Entry::marker || entry.level < level) continue;
        if (entry.kind == Entry::lease && LockHeldByMe(&entry.tag, ExclusiveLock))
            LockRelease(&entry.tag, ExclusiveLock, true);
        entry.kind = Entry::marker;
        entry.level = 0;
        entry.left_in = transactions_ended;
    }
}

void on_transaction_end(XactEvent event, void *) {
    if (entry_count == 0) return;
    const bool aborted = event == XACT_EVENT_ABORT || event == XACT_EVENT_PARALLEL_ABORT;
    const bool kept = event == XACT_EVENT_COMMIT || event == XACT_EVENT_PARALLEL_COMMIT || event == XACT_EVENT_PREPARE;
    if (!aborted && !kept) return;  // the PRE_ events
    if (aborted) roll_back(1);
    for (int i = entry_count - 1; i >= 0; --i) {
        SessionLease &entry = entries[i];
        // A marker lives through the rest of its transaction and the next one: long enough for an error
        // path to release, short enough not to take the release of a later lease. An attempt cannot
        // outlive its call (never left behind).
        const bool spent =
            (entry.kind == Entry::marker && entry.left_in < transactions_ended) || entry.kind == Entry::attempt;
        if (spent)
            forget(i);
        else
            entry.level = 0;  // kept: a session lease outlives the transaction that took it (a prepared one too)
    }
    ++transactions_ended;
}

void on_subtransaction_end(SubXactEvent event, SubTransactionId, SubTransactionId, void *) {
    if (entry_count == 0) return;
    const int level = GetCurrentTransactionNestLevel();  // the ending subtransaction's
    if (event == SUBXACT_EVENT_ABORT_SUB) {
        roll_back(level);
    } else if (event == SUBXACT_EVENT_COMMIT_SUB) {
        for (int i = 0; i < entry_count; ++i)
            if (entries[i].level >= level) entries[i].level = level - 1;
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
        if (entry.kind != Entry::lease) continue;
        if (!LockHeldByMe(&entry.tag, ExclusiveLock)) {
            forget(i);
        } else if (expired(entry, now)) {
            forget(i);
            LockRelease(&entry.tag, ExclusiveLock, true);
        }
    }
}

void session_lease_attempt(uint64 identity, core::Micros period) {
    for (int i = entry_count - 1; i >= 0; --i)
        if (entries[i].kind == Entry::marker && entries[i].identity == identity) forget(i);
    reserve_entry();
    entries[entry_count++] =
        SessionLease{identity, LOCKTAG{}, 0, period, GetCurrentTransactionNestLevel(), 0, Entry::attempt};
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

bool lease_release(uint64 identity, core::Micros period) {
    free_expired_session_leases(clock_now());  // an expired lease is not the one to release: a live one is
    for (int i = 0; i < entry_count; ++i) {
        if (entries[i].kind != Entry::marker || entries[i].identity != identity) continue;
        forget(i);
        return false;
    }
    // First a lease of the current period (the one acquires count), then any other.
    for (const bool any_period : {false, true}) {
        int chosen = -1;
        for (int i = 0; i < entry_count; ++i) {
            const SessionLease &lease = entries[i];
            if (lease.kind != Entry::lease || lease.identity != identity || (!any_period && lease.period != period))
                continue;
            // Oldest first; a later one wins only if it was taken by a (sub)transaction still open, as deep
            // as the chosen one's or deeper.
            if (chosen < 0 || (lease.level > 0 && lease.level >= entries[chosen].level)) chosen = i;
        }
        if (chosen < 0) continue;
        const LOCKTAG tag = entries[chosen].tag;
        forget(chosen);
        LockRelease(&tag, ExclusiveLock, true);
        return true;
    }
    return false;
}

}  // namespace pg_ratelimit
