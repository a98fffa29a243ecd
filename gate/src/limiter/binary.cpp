#include "limiter/binary.hpp"

#include <cstring>

namespace gate::limiter {
namespace {

constexpr unsigned INTERVAL_OID = 1186;
constexpr unsigned INT4_OID = 23;

void put32(std::string &out, std::uint32_t value) {
    for (int shift = 24; shift >= 0; shift -= 8) out += static_cast<char>((value >> shift) & 0xff);
}

void put64(std::string &out, std::uint64_t value) {
    for (int shift = 56; shift >= 0; shift -= 8) out += static_cast<char>((value >> shift) & 0xff);
}

std::uint64_t get(const char *bytes, int count) {
    std::uint64_t value = 0;
    for (int i = 0; i < count; ++i) value = (value << 8) | static_cast<unsigned char>(bytes[i]);
    return value;
}

// ndim 1, no NULLs, the element type, n elements from lower bound 1.
std::string array_header(unsigned element_oid, std::size_t count) {
    std::string out;
    put32(out, 1);
    put32(out, 0);
    put32(out, element_oid);
    put32(out, static_cast<std::uint32_t>(count));
    put32(out, 1);
    return out;
}

}  // namespace

std::string encode_text_array(const std::vector<std::string> &items) {
    std::string out = array_header(TEXT_OID, items.size());
    for (const auto &item : items) {
        put32(out, static_cast<std::uint32_t>(item.size()));
        out += item;
    }
    return out;
}

std::string encode_int4_array(const std::vector<std::int32_t> &items) {
    std::string out = array_header(INT4_OID, items.size());
    for (const auto item : items) {
        put32(out, 4);
        put32(out, static_cast<std::uint32_t>(item));
    }
    return out;
}

std::string encode_interval_array(const std::vector<std::chrono::microseconds> &items) {
    std::string out = array_header(INTERVAL_OID, items.size());
    for (const auto item : items) {
        put32(out, 16);
        put64(out, static_cast<std::uint64_t>(item.count()));  // time
        put32(out, 0);                                         // days
        put32(out, 0);                                         // months
    }
    return out;
}

std::int32_t decode_int4(const char *bytes) { return static_cast<std::int32_t>(get(bytes, 4)); }

std::int64_t decode_int8(const char *bytes) { return static_cast<std::int64_t>(get(bytes, 8)); }

std::chrono::microseconds decode_interval(const char *bytes) {
    constexpr std::int64_t DAY = 86'400'000'000;
    const auto time = static_cast<std::int64_t>(get(bytes, 8));
    const auto days = static_cast<std::int32_t>(get(bytes + 8, 4));
    const auto months = static_cast<std::int32_t>(get(bytes + 12, 4));
    const std::int64_t month_micros =
        (months / 12) * (DAY * 365 + DAY / 4) + static_cast<std::int64_t>(months % 12) * 30 * DAY;
    return std::chrono::microseconds{time + days * DAY + month_micros};
}

}  // namespace gate::limiter
