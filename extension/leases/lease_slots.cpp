#include "leases/lease_slots.hpp"

#include "clock.hpp"
#include "leases/session_leases.hpp"
#include "pg_compat.hpp"

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
    if (pg_compat::lock_held_by_me(&tag, ExclusiveLock)) return true;
    if (LockAcquire(&tag, ExclusiveLock, false, true) == LOCKACQUIRE_NOT_AVAIL) return true;
    LockRelease(&tag, ExclusiveLock, false);
    return false;
}

}  // namespace

core::Outcome lease_acquire(uint64 identity, int slots, core::Micros period, LeaseScope scope) {
    const bool session = scope == LeaseScope::session;
    const core::Micros now = clock_now();
    free_expired_session_leases(now);
    if (session) session_lease_attempt(identity, period, now);

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
        bool busy = pg_compat::lock_held_by_me(&transaction_tag, ExclusiveLock) ||
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
        // Taken last, after every probe, and recorded at once (nothing can fail in between): the abort
        // callbacks give it back if the statement fails later (the caller never told of it).
        const LOCKTAG tag = lease_tag(
            core::lease_slot_tag(identity, static_cast<uint32>(tally.first_free), bands.current), LEASE_SESSION_MARKER);
        took = LockAcquire(&tag, ExclusiveLock, true, true) != LOCKACQUIRE_NOT_AVAIL;
        if (took) session_lease_taken(tag, bands.current);
    }
    if (session && !took) session_lease_not_taken();
    LockRelease(&mutex, ExclusiveLock, false);
    return core::lease_outcome(tally, bands, took, session && took);
}

}  // namespace pg_ratelimit
