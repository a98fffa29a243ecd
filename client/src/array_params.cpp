#include "array_params.hpp"

#include <cstdint>
#include <cstring>
#include <limits>
#include <stdexcept>

namespace pg_ratelimit::detail {
namespace {

// Built-in type OIDs, fixed in PostgreSQL's catalog (pg_type.dat) since the beginning.
constexpr std::uint32_t TEXT_OID = 25;
constexpr std::uint32_t FLOAT8_OID = 701;

// The server allocates a parameter in one piece: MaxAllocSize (1 GB - 1) bytes at most.
constexpr std::size_t MAX_PARAM_BYTES = 0x3fffffff;

// Header: ndim, flags, element type, then (length, lower bound) per dimension; one int32 per element's
// length.
constexpr std::size_t LENGTH_BYTES = 4;
constexpr std::size_t HEADER_BYTES = std::size_t{5} * LENGTH_BYTES;
constexpr std::size_t FLOAT8_BYTES = 8;

// The wire format is big-endian ("network order") throughout.
void put_u32(std::string &out, std::uint32_t value) {
    for (int shift = 24; shift >= 0; shift -= 8) out += static_cast<char>((value >> shift) & 0xffU);
}

void put_u64(std::string &out, std::uint64_t value) {
    for (int shift = 56; shift >= 0; shift -= 8) out += static_cast<char>((value >> shift) & 0xffU);
}

void require_fits(std::size_t bytes, std::size_t count) {
    if (bytes > MAX_PARAM_BYTES || count > static_cast<std::size_t>(std::numeric_limits<std::int32_t>::max()))
        throw std::length_error("pg_ratelimit: a batch of " + std::to_string(count) + " elements (" +
                                std::to_string(bytes) + " bytes) exceeds what one parameter can carry (1 GB)");
}

std::string header(std::size_t count, std::uint32_t element_type, std::size_t total_bytes) {
    std::string out;
    out.reserve(total_bytes);
    put_u32(out, count == 0 ? 0 : 1);  // dimensions: the empty array has none
    put_u32(out, 0);                   // flags: no NULL elements
    put_u32(out, element_type);
    if (count > 0) {
        put_u32(out, static_cast<std::uint32_t>(count));
        put_u32(out, 1);  // lower bound: SQL arrays start at 1
    }
    return out;
}

}  // namespace

std::string text_array_param(const std::vector<std::string> &values) {
    std::size_t total = HEADER_BYTES;
    for (const std::string &value : values) {
        total += LENGTH_BYTES + value.size();
        require_fits(total, values.size());  // checked as it grows: the sum itself cannot overflow
    }
    std::string out = header(values.size(), TEXT_OID, total);
    for (const std::string &value : values) {
        put_u32(out, static_cast<std::uint32_t>(value.size()));
        out += value;
    }
    return out;
}

std::string float8_array_param(const std::vector<double> &values) {
    static_assert(sizeof(double) == sizeof(std::uint64_t) && std::numeric_limits<double>::is_iec559,
                  "float8 is sent as the IEEE 754 bits of a double");
    constexpr std::size_t ELEMENT_BYTES = LENGTH_BYTES + FLOAT8_BYTES;
    // Compared as a count first: the byte total itself could overflow for an absurd size.
    const bool fits = values.size() <= (MAX_PARAM_BYTES - HEADER_BYTES) / ELEMENT_BYTES;
    const std::size_t total = HEADER_BYTES + (fits ? values.size() * ELEMENT_BYTES : 0);
    require_fits(fits ? total : MAX_PARAM_BYTES + 1, values.size());
    std::string out = header(values.size(), FLOAT8_OID, total);
    for (const double value : values) {
        std::uint64_t bits = 0;
        std::memcpy(&bits, &value, sizeof bits);
        put_u32(out, FLOAT8_BYTES);
        put_u64(out, bits);
    }
    return out;
}

}  // namespace pg_ratelimit::detail
