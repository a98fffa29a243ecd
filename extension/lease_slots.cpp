#include "lease_slots.hpp"

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

// This backend's session leases, oldest first (for rate_limit_release), in TopMemoryContext.
struct SessionLease {
    uint64 identity;
    LOCKTAG tag;
};
SessionLease *session_leases = nullptr;
int session_lease_count = 0;
int session_lease_room = 0;

void forget_session_lease(int index) {
    for (int i = index + 1; i < session_lease_count; ++i) session_leases[i - 1] = session_leases[i];
    --session_lease_count;
}

// Room for one more entry, made before the lock is taken so that nothing can fail between taking it and
// recording it. Entries whose lock is gone (pg_advisory_unlock_all, DISCARD ALL) are dropped first.
void reserve_session_lease_entry() {
    if (session_lease_count < session_lease_room) return;
    for (int i = session_lease_count - 1; i >= 0; --i)
        if (!LockHeldByMe(&session_leases[i].tag, ExclusiveLock)) forget_session_lease(i);
    if (session_lease_count < session_lease_room) return;
    const int room = session_lease_room == 0 ? 16 : session_lease_room * 2;
    const Size bytes = sizeof(SessionLease) * static_cast<Size>(room);
    session_leases = static_cast<SessionLease *>(session_leases == nullptr ? MemoryContextAlloc(TopMemoryContext, bytes)
                                                                           : repalloc(session_leases, bytes));
    session_lease_room = room;
}

}  // namespace

core::Outcome lease_acquire(uint64 identity, int slots, core::Micros period, LeaseScope scope) {
    const core::LeaseBands bands = core::lease_bands(period, clock_now());
    const bool session = scope == LeaseScope::session;
    if (session) reserve_session_lease_entry();

    const LOCKTAG mutex = lease_tag(identity, LEASE_MUTEX_MARKER);
    (void)LockAcquire(&mutex, ExclusiveLock, false, false);
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
        for (int back = 0; back < core::LEASE_LIVE_BANDS && !busy; ++back) {
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
        // Taken last, after every probe: no interrupt can come between the take and the record, so a
        // session lease the caller was not told about cannot be left behind.
        const LOCKTAG tag = lease_tag(
            core::lease_slot_tag(identity, static_cast<uint32>(tally.first_free), bands.current), LEASE_SESSION_MARKER);
        took = LockAcquire(&tag, ExclusiveLock, true, true) != LOCKACQUIRE_NOT_AVAIL;
        if (took) session_leases[session_lease_count++] = SessionLease{identity, tag};
    }
    LockRelease(&mutex, ExclusiveLock, false);
    return core::lease_outcome(tally, bands, took, session && took);
}

bool lease_release(uint64 identity) {
    for (int i = 0; i < session_lease_count;) {
        if (session_leases[i].identity != identity) {
            ++i;
            continue;
        }
        const LOCKTAG tag = session_leases[i].tag;
        forget_session_lease(i);
        // Gone already (pg_advisory_unlock_all, DISCARD ALL): the next one of the key, if any.
        if (!LockHeldByMe(&tag, ExclusiveLock)) continue;
        LockRelease(&tag, ExclusiveLock, true);
        return true;
    }
    return false;
}

}  // namespace pg_ratelimit
