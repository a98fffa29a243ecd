#include "key_hash.hpp"

namespace pg_ratelimit::detail {
namespace {

constexpr std::uint32_t rotate(std::uint32_t value, int bits) noexcept {
    return (value << bits) | (value >> (32 - bits));
}

// lookup3's mix: every bit of a, b and c affects the others, reversibly.
void mix(std::uint32_t &a, std::uint32_t &b, std::uint32_t &c) noexcept {
    a -= c, a ^= rotate(c, 4), c += b;
    b -= a, b ^= rotate(a, 6), a += c;
    c -= b, c ^= rotate(b, 8), b += a;
    a -= c, a ^= rotate(c, 16), c += b;
    b -= a, b ^= rotate(a, 19), a += c;
    c -= b, c ^= rotate(b, 4), b += a;
}

// lookup3's final: the last avalanche into c.
void finish(std::uint32_t &a, std::uint32_t &b, std::uint32_t &c) noexcept {
    c ^= b, c -= rotate(b, 14);
    a ^= c, a -= rotate(c, 11);
    b ^= a, b -= rotate(a, 25);
    c ^= b, c -= rotate(b, 16);
    a ^= c, a -= rotate(c, 4);
    b ^= a, b -= rotate(a, 14);
    c ^= b, c -= rotate(b, 24);
}

// Up to four bytes from p, the first the least significant, starting at bit `shift`.
std::uint32_t word(const unsigned char *p, std::size_t count, int shift = 0) noexcept {
    std::uint32_t value = 0;
    for (std::size_t i = 0; i < count; ++i) value |= static_cast<std::uint32_t>(p[i]) << (shift + 8 * i);
    return value;
}

}  // namespace

std::uint32_t hashtext(std::string_view key) noexcept {
    const auto *p = reinterpret_cast<const unsigned char *>(key.data());
    std::size_t left = key.size();
    std::uint32_t a = 0x9e3779b9U + static_cast<std::uint32_t>(key.size()) + 3923095U;
    std::uint32_t b = a;
    std::uint32_t c = a;
    for (; left >= 12; left -= 12, p += 12) {
        a += word(p, 4);
        b += word(p + 4, 4);
        c += word(p + 8, 4);
        mix(a, b, c);
    }
    // The last 0 to 11 bytes: a takes bytes 0-3, b 4-7, and c 8-10 from its second byte on (its first is
    // the length's in lookup3's layout).
    if (left > 8) c += word(p + 8, left - 8, 8);
    if (left > 4) b += word(p + 4, left > 8 ? 4 : left - 4);
    if (left > 0) a += word(p, left > 4 ? 4 : left);
    finish(a, b, c);
    return c;
}

}  // namespace pg_ratelimit::detail
