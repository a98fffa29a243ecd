// The 64-bit hashing the core shares: FNV-1a over bytes, then a bijective mixer so that every input bit
// reaches every output bit (FNV alone leaves the high bits weak for short inputs). Used for memory table
// placement (memory_identity.hpp) and lease lock tags (leases.hpp); not for anything an attacker's choice of
// keys could exploit beyond collisions, which both users tolerate (a collision never admits more).
#pragma once

#include <cstddef>
#include <cstdint>

namespace pg_ratelimit::core {

inline constexpr std::uint64_t FNV_OFFSET = 14695981039346656037ULL;
inline constexpr std::uint64_t FNV_PRIME = 1099511628211ULL;

[[nodiscard]] inline std::uint64_t fnv1a(std::uint64_t state, const unsigned char *data, std::size_t size) noexcept {
    for (std::size_t i = 0; i < size; ++i) {
        state ^= data[i];
        state *= FNV_PRIME;
    }
    return state;
}

// The SplitMix64 finalizer (xor-shifts and odd multipliers): bijective, so it loses nothing of its input;
// mix64(0) == 0.
[[nodiscard]] inline std::uint64_t mix64(std::uint64_t x) noexcept {
    x ^= x >> 30;
    x *= 0xbf58476d1ce4e5b9ULL;
    x ^= x >> 27;
    x *= 0x94d049bb133111ebULL;
    x ^= x >> 31;
    return x;
}

}  // namespace pg_ratelimit::core
