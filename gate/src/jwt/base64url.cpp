#include "jwt/base64url.hpp"

#include <array>
#include <cstdint>

namespace gate::jwt {
namespace {

constexpr char ALPHABET[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

constexpr std::array<int, 256> decode_table() {
    std::array<int, 256> table{};
    for (auto &entry : table) entry = -1;
    for (int i = 0; i < 64; ++i) table[static_cast<unsigned char>(ALPHABET[i])] = i;
    return table;
}
constexpr auto TABLE = decode_table();

}  // namespace

std::optional<std::string> base64url_decode(std::string_view text) {
    if (text.size() % 4 == 1) return std::nullopt;
    std::string out;
    out.reserve(text.size() * 3 / 4);
    std::uint32_t bits = 0;
    int count = 0;
    for (const char c : text) {
        const int value = TABLE[static_cast<unsigned char>(c)];
        if (value < 0) return std::nullopt;
        bits = (bits << 6) | static_cast<std::uint32_t>(value);
        count += 6;
        if (count >= 8) {
            count -= 8;
            out += static_cast<char>((bits >> count) & 0xff);
        }
    }
    // Leftover bits must be zero: a second spelling of the same bytes would let a token be altered unseen.
    if ((bits & ((1u << count) - 1)) != 0) return std::nullopt;
    return out;
}

std::string base64url_encode(std::string_view bytes) {
    std::string out;
    std::uint32_t bits = 0;
    int count = 0;
    for (const char c : bytes) {
        bits = (bits << 8) | static_cast<unsigned char>(c);
        count += 8;
        while (count >= 6) {
            count -= 6;
            out += ALPHABET[(bits >> count) & 0x3f];
        }
    }
    if (count > 0) out += ALPHABET[(bits << (6 - count)) & 0x3f];
    return out;
}

}  // namespace gate::jwt
