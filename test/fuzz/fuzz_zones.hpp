// Time zones for the core fuzzer's calendar limits (core::TimeZone): fixed offsets, and synthetic
// daylight-saving zones whose offset alternates between two values at instants phase + n * spacing. Both
// are pure arithmetic (no tz database, no TZ, no allocation), so the fuzzer stays deterministic and fast.
//
// They read local times as PostgreSQL does (DetermineTimeZoneOffset, which extension/catalog/time_zones.cpp calls):
// take the first change after the local time minus one day (read as if UTC); the offsets before and after
// it give two candidate instants; if both lie before the change, or both after it, that one, else the
// later one (a skipped local time maps with the offset before the gap, a repeated one to its second
// occurrence). PostgreSQL assumes offsets under 24 hours and changes at least 48 hours apart: the decoder
// keeps offsets within 15 hours, jumps within 24 hours and changes at least 49 hours apart. Answers that
// would not fit in int64 read as UTC, as the glue's do out of PostgreSQL's range.
#pragma once

#include <cinttypes>
#include <cstdint>
#include <cstdio>
#include <limits>

#include "core/limit.hpp"

namespace pg_ratelimit::fuzz {

class FuzzZone {
  public:
    FuzzZone() : zone_{OffsetAt, UtcOfLocal, this} {}
    FuzzZone(const FuzzZone &) = delete;  // zone_ points to this object
    FuzzZone &operator=(const FuzzZone &) = delete;

    // A fixed offset (seconds east of UTC).
    void set_fixed(std::int64_t offset) { set_alternating(offset, offset, 0, kNoChanges); }
    // `first` in [phase + 2n * spacing, phase + (2n + 1) * spacing), `second` in the other half of each cycle.
    void set_alternating(std::int64_t first, std::int64_t second, std::int64_t phase, std::int64_t spacing) {
        first_ = first;
        second_ = second;
        phase_ = phase;
        spacing_ = spacing;
        // New rules: the windows the zone remembers (core::TimeZone::recent) were found under the old ones.
        // (The server's zones never change rules: PostgreSQL loads each once per backend.)
        for (core::TimeZone::Window &window : zone_.recent) window = {};
        zone_.next_recent = 0;
    }

    [[nodiscard]] const core::TimeZone &zone() const { return zone_; }

    void print(const char *label) const {
        if (first_ == second_) {
            std::fprintf(stderr, "  %s: fixed offset %" PRId64 " s\n", label, first_);
        } else {
            std::fprintf(stderr,
                         "  %s: offset %" PRId64 " s, then %" PRId64 " s, alternating at %" PRId64 " s + n * %" PRId64
                         " s\n",
                         label, first_, second_, phase_, spacing_);
        }
    }

  private:
    static constexpr std::int64_t kMicros = 1000000;
    static constexpr std::int64_t kNoChanges = std::int64_t{1} << 62;

    static __int128 floor_div(__int128 a, __int128 b) {
        const __int128 quotient = a / b;
        return (a % b != 0 && a < 0) ? quotient - 1 : quotient;
    }

    // The number of the stretch between two changes that holds UTC second s.
    [[nodiscard]] __int128 stretch(std::int64_t seconds) const {
        return floor_div(static_cast<__int128>(seconds) - phase_, spacing_);
    }
    [[nodiscard]] std::int64_t offset_in(__int128 stretch) const { return (stretch & 1) == 0 ? first_ : second_; }
    [[nodiscard]] std::int64_t offset_seconds(std::int64_t seconds) const { return offset_in(stretch(seconds)); }

    // DetermineTimeZoneOffset's offset for a local time (whole seconds since 2000-01-01 on the wall clock).
    [[nodiscard]] std::int64_t offset_of_local(std::int64_t seconds) const {
        const std::int64_t day_before = seconds - 86400;
        const __int128 n = stretch(day_before);
        const std::int64_t before = offset_in(n);
        const std::int64_t after = offset_in(n + 1);
        if (before == after) return before;
        const __int128 change = static_cast<__int128>(phase_) + (n + 1) * spacing_;  // the first second of `after`
        const __int128 before_time = static_cast<__int128>(seconds) - before;
        const __int128 after_time = static_cast<__int128>(seconds) - after;
        if (before_time < change && after_time < change) return before;
        if (before_time > change && after_time >= change) return after;
        return before_time > after_time ? before : after;  // skipped or repeated: the later instant
    }

    static const FuzzZone &of(const core::TimeZone &zone) { return *static_cast<const FuzzZone *>(zone.data); }

    static core::Micros OffsetAt(const core::TimeZone &zone, core::Micros utc) noexcept {
        const auto seconds = static_cast<std::int64_t>(floor_div(utc, kMicros));
        return of(zone).offset_seconds(seconds) * kMicros;
    }

    static core::Micros UtcOfLocal(const core::TimeZone &zone, core::Micros local) noexcept {
        const auto seconds = static_cast<std::int64_t>(floor_div(local, kMicros));
        const __int128 utc =
            static_cast<__int128>(local) - static_cast<__int128>(of(zone).offset_of_local(seconds)) * kMicros;
        if (utc < std::numeric_limits<core::Micros>::min() || utc > std::numeric_limits<core::Micros>::max())
            return local;
        return static_cast<core::Micros>(utc);
    }

    std::int64_t first_ = 0;
    std::int64_t second_ = 0;
    std::int64_t phase_ = 0;
    std::int64_t spacing_ = kNoChanges;
    core::TimeZone zone_;
};

// Where decoded limits keep their zones: the current limit's, and a spare for the next definition (a
// redefinition reads both while it rescales). adopt() once the spare's limit is defined.
class ZoneSlots {
  public:
    FuzzZone &spare() { return slots_[1 - current_]; }
    void adopt() { current_ = 1 - current_; }

  private:
    FuzzZone slots_[2];
    int current_ = 0;
};

}  // namespace pg_ratelimit::fuzz
