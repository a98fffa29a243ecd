#include "core/leases.hpp"

#include <algorithm>

#include "core/hash.hpp"

namespace pg_ratelimit::core {

std::uint64_t lease_identity(const char *limit_name, std::size_t limit_size, const char *key,
                             std::size_t key_size) noexcept {
    // Neither a name nor a key can hold a NUL byte (PostgreSQL text): the separator keeps ("ab", "c") and
    // ("a", "bc") apart.
    const unsigned char separator = 0;
    std::uint64_t hash = fnv1a(FNV_OFFSET, reinterpret_cast<const unsigned char *>(limit_name), limit_size);
    hash = fnv1a(hash, &separator, 1);
    return mix64(fnv1a(hash, reinterpret_cast<const unsigned char *>(key), key_size));
}

std::uint64_t lease_slot_tag(std::uint64_t identity, std::uint32_t slot, std::int64_t band) noexcept {
    const std::uint64_t where = mix64(static_cast<std::uint64_t>(band) * 0x9E3779B97F4A7C15ULL + slot);
    return mix64(identity ^ where);
}

LeaseBands lease_bands(Micros period, Micros now) noexcept {
    LeaseBands bands;
    bands.width = std::max<Micros>(1, period / LEASE_BANDS_PER_PERIOD + (period % LEASE_BANDS_PER_PERIOD != 0));
    // Floor division (now may precede 2000-01-01).
    bands.current = now / bands.width;
    bands.into_current = now % bands.width;
    if (bands.into_current < 0) {
        bands.current -= 1;
        bands.into_current += bands.width;
    }
    return bands;
}

Micros lease_band_expires_in(const LeaseBands &bands, std::int64_t band) noexcept {
    // (band + 9) * width - now, computed from the current band so that nothing can overflow.
    // 1 .. 9 for a live band, 10 for the future one.
    const std::int64_t bands_left = band + LEASE_LIVE_BANDS - bands.current;
    return bands_left * bands.width - bands.into_current;
}

void tally_free(LeaseTally *tally, int slot) noexcept {
    ++tally->free;
    if (tally->first_free < 0) tally->first_free = slot;
}

void tally_transaction_lease(LeaseTally *tally, const LeaseBands &bands) noexcept {
    tally->soonest_release = std::min(tally->soonest_release, bands.width);
}

void tally_session_lease(LeaseTally *tally, const LeaseBands &bands, std::int64_t band) noexcept {
    const Micros expires_in = lease_band_expires_in(bands, band);
    tally->soonest_release = std::min(tally->soonest_release, expires_in);
    tally->last_expiry = std::max(tally->last_expiry, expires_in);
}

Outcome lease_outcome(const LeaseTally &tally, const LeaseBands &bands, bool took, bool took_session) noexcept {
    Outcome out;
    out.allowed = took;
    out.balance = took ? tally.free - 1 : 0;
    out.retry_after = took ? 0 : std::max<Micros>(1, tally.soonest_release);
    out.reset_after = tally.last_expiry;
    if (took && took_session) out.reset_after = std::max(out.reset_after, lease_band_expires_in(bands, bands.current));
    return out;
}

}  // namespace pg_ratelimit::core
