#include "lease_slots.hpp"

#include <initializer_list>

#include "clock.hpp"

namespace pg_ratelimit {
namespace {

LOCKTAG lease_tag(uint64 bits, uint16 marker) {
    LOCKTAG tag;
    SET_LOCKTAG_ADVISORY(tag, MyDatabaseId, static_cast<uint32>(bits >> 32), static_cast<uint32>(bits), marker);
    return tag;
}

// Whether a lease holds `tag`: this backend's own (a second acquire in the same transaction or session
// takes another slot), or another backend's (a conditional acquire fails). A free tag is taken for a
// moment, at transaction level, and released at once.
bool tag_busy(const LOCKTAG &tag) {
    if (LockHeldByMe(&tag, ExclusiveLock)) return true;
    if (LockAcquire(&tag, ExclusiveLock, false, true) == LOCKACQUIRE_NOT_AVAIL) return true;
    LockRelease(&tag, ExclusiveLock, false);
    return false;
}

// This backend's session leases, oldest first (for rate_limit_release), in TopMemoryContext, each with its
// band and the period it was taken under (which say when it expires), and the nesting level of the
// (sub)transaction that took it until that transaction commits (0 after).
struct SessionLease {
    uint64 identity;
    LOCKTAG tag;
    std::int64_t band;
    core::Micros period;
    int level;
};
SessionLease *session_leases = nullptr;
int session_lease_count = 0;
int session_lease_room = 0;

void forget_session_lease(int index) {
    for (int i = index + 1; i < session_lease_count; ++i) session_leases[i - 1] = session_leases[i];
    --session_lease_count;
}

// Whether a session lease no longer counts at `now` (its band is no longer a live one).
bool expired(const SessionLease &lease, core::Micros now) {
    return lease.band <= core::lease_bands(lease.period, now).current - core::LEASE_LIVE_BANDS;
}

// Drops the entries whose lock is gone (pg_advisory_unlock_all, DISCARD ALL), and gives back the locks of
// the session leases that have expired: they count for no one, and a long-lived session that never
// releases would otherwise fill the shared lock table with them.
void free_expired_session_leases(core::Micros now) {
    for (int i = session_lease_count - 1; i >= 0; --i) {
        const SessionLease lease = session_leases[i];
        if (!LockHeldByMe(&lease.tag, ExclusiveLock)) {
            forget_session_lease(i);
        } else if (expired(lease, now)) {
            forget_session_lease(i);
            LockRelease(&lease.tag, ExclusiveLock, true);
        }
    }
}

// Gives back the session leases taken at nesting level `level` or deeper: their (sub)transaction aborted.
// The lock manager keeps session locks through a rollback; the caller was not told (a cancel or an error
// after the acquire returned) or its work is undone, as a rate limit's consumption would be. Called from
// abort callbacks: nothing here can fail (a lease whose lock is gone is only forgotten).
void release_aborted_session_leases(int level) {
    for (int i = session_lease_count - 1; i >= 0; --i) {
        const SessionLease lease = session_leases[i];
        if (lease.level == 0 || lease.level < level) continue;
        forget_session_lease(i);
        if (LockHeldByMe(&lease.tag, ExclusiveLock)) LockRelease(&lease.tag, ExclusiveLock, true);
    }
}

void on_transaction_end(XactEvent event, void *) {
    if (session_lease_count == 0) return;
    if (event == XACT_EVENT_ABORT || event == XACT_EVENT_PARALLEL_ABORT) {
        release_aborted_session_leases(1);
    } else if (event == XACT_EVENT_COMMIT || event == XACT_EVENT_PARALLEL_COMMIT || event == XACT_EVENT_PREPARE) {
        // Kept: a session lease outlives the transaction that took it (a prepared one included).
        for (int i = 0; i < session_lease_count; ++i) session_leases[i].level = 0;
    }
}

void on_subtransaction_end(SubXactEvent event, SubTransactionId, SubTransactionId, void *) {
    if (session_lease_count == 0) return;
    const int level = GetCurrentTransactionNestLevel();  // the ending subtransaction's
    if (event == SUBXACT_EVENT_ABORT_SUB) {
        release_aborted_session_leases(level);
    } else if (event == SUBXACT_EVENT_COMMIT_SUB) {
        for (int i = 0; i < session_lease_count; ++i)
            if (session_leases[i].level >= level) session_leases[i].level = level - 1;
    }
}

// Room for one more entry, made before the lock is taken so that nothing can fail between taking it and
// recording it.
void reserve_session_lease_entry() {
    if (session_lease_count < session_lease_room) return;
    const int room = session_lease_room == 0 ? 16 : session_lease_room * 2;
    const Size bytes = sizeof(SessionLease) * static_cast<Size>(room);
    session_leases = static_cast<SessionLease *>(session_leases == nullptr ? MemoryContextAlloc(TopMemoryContext, bytes)
                                                                           : repalloc(session_leases, bytes));
    session_lease_room = room;
}

}  // namespace

void lease_slots_init() {
    RegisterXactCallback(on_transaction_end, nullptr);
    RegisterSubXactCallback(on_subtransaction_end, nullptr);
}

core::Outcome lease_acquire(uint64 identity, int slots, core::Micros period, LeaseScope scope) {
    const bool session = scope == LeaseScope::session;
    free_expired_session_leases(clock_now());
    if (session) reserve_session_lease_entry();

    const LOCKTAG mutex = lease_tag(identity, LEASE_MUTEX_MARKER);
    (void)LockAcquire(&mutex, ExclusiveLock, false, false);
    // The clock is read under the mutex: a lease another backend took while this one waited for it (or
    // was descheduled) is in a band this reading sees.
    const core::LeaseBands bands = core::lease_bands(period, clock_now());
    core::LeaseTally tally;
    for (int slot = 0; slot < slots; ++slot) {
        // A cancel here aborts the transaction, which releases the mutex and any transaction-level tag;
        // a session lease is only taken after the loop.
        CHECK_FOR_INTERRUPTS();
        const auto slot_number = static_cast<uint32>(slot);
        const LOCKTAG transaction_tag =
            lease_tag(core::lease_slot_tag(identity, slot_number, 0), LEASE_TRANSACTION_MARKER);
        bool busy = LockHeldByMe(&transaction_tag, ExclusiveLock) ||
                    LockAcquire(&transaction_tag, ExclusiveLock, false, true) == LOCKACQUIRE_NOT_AVAIL;
        if (busy) {
            core::tally_transaction_lease(&tally, bands);
            continue;
        }
        // The transaction tag is ours now: kept if this slot becomes this call's transaction lease.
        // From the future band(s) down to the oldest live one.
        for (int back = -core::LEASE_FUTURE_BANDS; back < core::LEASE_LIVE_BANDS && !busy; ++back) {
            const std::int64_t band = bands.current - back;
            busy = tag_busy(lease_tag(core::lease_slot_tag(identity, slot_number, band), LEASE_SESSION_MARKER));
            if (busy) core::tally_session_lease(&tally, bands, band);
        }
        const bool keep = !busy && !session && tally.first_free < 0;
        if (!keep) LockRelease(&transaction_tag, ExclusiveLock, false);
        if (!busy) core::tally_free(&tally, slot);
    }

    bool took = !session && tally.first_free >= 0;
    if (session && tally.first_free >= 0) {
        // Taken last, after every probe: no interrupt can come between the take and the record, which the
        // abort callbacks read: a lease whose statement fails later (the caller never told) is given back.
        const LOCKTAG tag = lease_tag(
            core::lease_slot_tag(identity, static_cast<uint32>(tally.first_free), bands.current), LEASE_SESSION_MARKER);
        took = LockAcquire(&tag, ExclusiveLock, true, true) != LOCKACQUIRE_NOT_AVAIL;
        if (took)
            session_leases[session_lease_count++] =
                SessionLease{identity, tag, bands.current, period, GetCurrentTransactionNestLevel()};
    }
    LockRelease(&mutex, ExclusiveLock, false);
    return core::lease_outcome(tally, bands, took, session && took);
}

bool lease_release(uint64 identity, core::Micros period) {
    free_expired_session_leases(clock_now());  // an expired lease is not the one to release: a live one is
    // First a lease of the current period (the one acquires count), then any other. Among those, first the
    // newest of the innermost (sub)transaction still open that took one, which its rollback would give back
    // anyway (acquire + release in a transaction that fails then frees one lease, not two: f63), then the
    // oldest committed one.
    for (const bool any_period : {false, true}) {
        int chosen = -1;
        for (int i = 0; i < session_lease_count; ++i) {
            const SessionLease &lease = session_leases[i];
            if (lease.identity != identity || (!any_period && lease.period != period)) continue;
            // Oldest first; a later one wins only if it was taken by a (sub)transaction still open, as deep
            // as the chosen one's or deeper.
            if (chosen < 0 || (lease.level > 0 && lease.level >= session_leases[chosen].level)) chosen = i;
        }
        if (chosen < 0) continue;
        const LOCKTAG tag = session_leases[chosen].tag;
        forget_session_lease(chosen);
        LockRelease(&tag, ExclusiveLock, true);
        return true;
    }
    return false;
}

}  // namespace pg_ratelimit
