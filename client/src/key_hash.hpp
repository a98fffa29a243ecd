// The partition a key belongs to, as the server and PL/Proxy reckon it (Options::partitions).
//
// PostgreSQL's hashtext() hashes a text's bytes with Bob Jenkins' lookup3 (2006, public domain), in the
// variant PostgreSQL uses for hash_any: the initial value 0x9e3779b9 + length + 3923095, 12-byte blocks
// read as three little-endian words on little-endian machines (x86-64, arm64: the only ones here), the
// last partial block added into a, b and c with c's low byte left for the length, and the final mix run
// even when no byte is left. PL/Proxy's RUN ON hashtext(key) takes the result as a 32-bit integer and
// keeps its low bits: partition = hash & (N - 1), N a power of two. The client computes the same from
// the key's bytes (its UTF-8), so a key goes to the same partition through the client as through the proxy
// (test/scale_out: compared with the server's hashtext on 20,000 keys, non-ASCII included). Keys under a
// nondeterministic collation would hash otherwise on the server: pg_ratelimit's keys are text with the
// database's default collation, which must be deterministic.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace pg_ratelimit::detail {

// hashtext(key) as an unsigned 32-bit value.
[[nodiscard]] std::uint32_t hashtext(std::string_view key) noexcept;

// The partition of `key` among `partitions` (a power of two).
[[nodiscard]] inline std::size_t partition_of(std::string_view key, std::size_t partitions) noexcept {
    return partitions <= 1 ? 0 : static_cast<std::size_t>(hashtext(key) & (partitions - 1));
}

}  // namespace pg_ratelimit::detail
