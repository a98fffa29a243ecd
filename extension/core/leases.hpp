// Concurrency limits (leases): the pure part. A concurrency limit bounds how many holders of a key are in
// flight at once: its rate N is the number of slots of each key, and a lease is one slot held. The glue
// (lease_slots.cpp) keeps the slots in PostgreSQL's lock manager; this file holds what needs no server:
// the key's identity and the lock tag of each slot, the time bands that make session leases expire, and
// the decision made from what the glue's probes found.
//
// Time bands: a session lease may be held at most `period` (the limit's period) before it stops counting.
// Each session lease is a lock on a tag that carries the band it was taken in: bands are `width` =
// ceil(period / 8) microseconds long, band b covering [b * width, (b + 1) * width). A lease taken in band
// b counts until (b + 9) * width: at least 8 * width >= period after it was taken, at most 9 * width, i.e.
// it expires between period and period + period/8 (+ 8 microseconds of rounding) after it was taken. A slot
// is therefore busy for session leases while any of the 9 live bands (current - 8 .. current) is held.
// Bands are full 64-bit numbers hashed into the tag, so an old band never comes back.
//
// The clock may step back (NTP, a VM resumed): a lease taken in the band after the current one counts
// too, so a step back of up to one band (period / 8) hides no lease. A longer step hides the leases taken
// in the bands it skips back over; a step forward expires leases early (README: leases).
#pragma once

#include <cstddef>
#include <cstdint>

#include "core/limit.hpp"

namespace pg_ratelimit::core {

// The most slots a concurrency limit (or a key's override) may have. Every acquire probes each slot
// (LEASE_PROBES_PER_SLOT lock-table look-ups): the cost of a call grows with N (README: leases).
inline constexpr int MAX_LEASE_SLOTS = 10000;
inline constexpr int LEASE_BANDS_PER_PERIOD = 8;
inline constexpr int LEASE_LIVE_BANDS = LEASE_BANDS_PER_PERIOD + 1;
inline constexpr int LEASE_FUTURE_BANDS = 1;  // bands after the current one probed (a clock stepped back)
// A free slot costs one probe of its transaction tag and one per live or future band.
inline constexpr int LEASE_PROBES_PER_SLOT = 1 + LEASE_LIVE_BANDS + LEASE_FUTURE_BANDS;

// The 64-bit identity of (limit name, key): every lock tag of the key derives from it. Two pairs with the
// same identity share their slots (fewer admissions for both, never more); with 64 bits that takes about
// 4 billion keys in flight at once for an even chance of one such pair.
[[nodiscard]] std::uint64_t lease_identity(const char *limit_name, std::size_t limit_size, const char *key,
                                           std::size_t key_size) noexcept;

// The 64 bits of a slot's lock tag: the transaction tag of slot s is lease_slot_tag(identity, s, 0) (under
// its own marker), a session tag of band b lease_slot_tag(identity, s, b). Distinct (slot, band) pairs map
// to distinct tags except for 64-bit hash collisions, which again can only make a free slot look busy.
[[nodiscard]] std::uint64_t lease_slot_tag(std::uint64_t identity, std::uint32_t slot, std::int64_t band) noexcept;

struct LeaseBands {
    Micros width = 1;          // ceil(period / 8), at least 1
    std::int64_t current = 0;  // floor(now / width)
    Micros into_current = 0;   // now - current * width, in [0, width)
};
[[nodiscard]] LeaseBands lease_bands(Micros period, Micros now) noexcept;

// How long after now a session lease of `band` (a live or future band) stops counting: in (0, 10 * width].
[[nodiscard]] Micros lease_band_expires_in(const LeaseBands &bands, std::int64_t band) noexcept;

// What the probes of one key's slots found.
struct LeaseTally {
    int free = 0;         // slots no live lease holds
    int first_free = -1;  // the lowest of them, -1 for none
    // Denied calls' hint: the soonest a busy slot may free. A session lease's expiry is known; a transaction
    // lease ends with its transaction, whose end nobody knows: it counts as one band (period / 8).
    Micros soonest_release = MAX_DURATION;
    Micros last_expiry = 0;  // the latest expiry of the session leases found (0: none)
};
void tally_free(LeaseTally *tally, int slot) noexcept;
void tally_transaction_lease(LeaseTally *tally, const LeaseBands &bands) noexcept;
void tally_session_lease(LeaseTally *tally, const LeaseBands &bands, std::int64_t band) noexcept;

// The decision (rate_limit_decision's four columns) once the call took a slot (took) or found none:
// - allowed: took;
// - balance (remaining): the free slots after the call (0 when denied);
// - retry_after: 0 when allowed; denied: the tally's soonest_release (at least 1 microsecond);
// - reset_after: until every session lease now counted on the key (the one just taken included) has
//   expired; transaction leases are not in it (they end with their transactions). 0 without session leases.
[[nodiscard]] Outcome lease_outcome(const LeaseTally &tally, const LeaseBands &bands, bool took,
                                    bool took_session) noexcept;

}  // namespace pg_ratelimit::core
