// The identity of one entry of the shared-memory state table (memory_table.hpp): a (limit name, key,
// shard) triple in a fixed-size, trivially copyable form that can live in shared memory.
//
// Encoding. The triple is written as one byte string, the same for both forms below:
//     varint(limit_len) varint(key_len) varint(uint32(shard)) limit bytes  key bytes
// where varint is the little-endian base-128 encoding (7 bits a byte, high bit set on every byte but the
// last). The lengths come first and a varint is self-delimiting, so distinct triples always give distinct
// strings: ("ab", "c") and ("a", "bc") differ in their lengths, shards in their own field.
// - Inline: when the whole string fits in MEMORY_IDENTITY_BYTES, it is the identity (digest = false).
// - Digest: otherwise the glue hashes the same string with SHA-256 (header from memory_identity_header,
//   then the limit bytes, then the key bytes) and the 32 bytes of the digest are the identity
//   (digest = true). Two triples then share an entry only if SHA-256 collides.
// An inline identity never equals a digest one (the flag is part of equality and of the hash).
//
// Hashes. `hash` places the entry (partition and slot, memory_table.hpp); it is seeded, so that keys
// cannot be chosen offline to pile into one partition (the glue draws the seed when it creates the
// table; 0 is allowed and gives a fixed placement). `limit_hash` identifies the limit alone, unseeded, so
// that it can be computed from the name at any time (memory_table.hpp: purge_limit). Both are this file's
// own 64-bit hash (FNV-1a, then a 64-bit finalizer): fast and well mixed, not a cryptographic PRF.
#pragma once

#include <cstddef>
#include <cstdint>
#include <type_traits>

namespace pg_ratelimit::core {

// Room for the encoded triple of an inline identity; a SHA-256 digest (32 bytes) always fits.
inline constexpr std::size_t MEMORY_IDENTITY_BYTES = 64;
inline constexpr std::size_t MEMORY_DIGEST_BYTES = 32;
// The longest header memory_identity_header writes: two 64-bit lengths and a 32-bit shard as varints.
inline constexpr std::size_t MEMORY_IDENTITY_HEADER_MAX = 10 + 10 + 5;

struct MemoryIdentity {
    std::uint64_t hash;                          // placement: memory_identity_hash(digest, bytes, length, seed)
    std::uint64_t limit_hash;                    // memory_limit_hash(limit name)
    std::uint16_t length;                        // bytes used in `bytes`; 0 only in an empty table slot
    bool digest;                                 // bytes is a SHA-256 digest of the encoding, not the encoding itself
    unsigned char bytes[MEMORY_IDENTITY_BYTES];  // zero beyond length
    // The database the limit belongs to (the glue's; 0: unknown, in entries loaded from a file of release
    // 0.1.0 whose identity is a digest). The encoding already names it (the glue scopes a limit's name by
    // its database): kept apart too, so that a dropped database's entries can be found, digests included.
    // In what was padding: the entry keeps its size and layout.
    std::uint32_t database;
};

static_assert(sizeof(MemoryIdentity) == 88, "the entry layout saved to files (memory_table.hpp)");

static_assert(std::is_trivially_copyable_v<MemoryIdentity> && std::is_standard_layout_v<MemoryIdentity>,
              "identities live in shared memory and are copied with memcpy");

// Writes the header of the encoding of (limit_len, key_len, shard) to out and returns its length
// (at most MEMORY_IDENTITY_HEADER_MAX). The glue feeds SHA-256 with it, then the limit, then the key.
[[nodiscard]] std::size_t memory_identity_header(std::size_t limit_len, std::size_t key_len, int shard,
                                                 unsigned char *out) noexcept;

// The inline identity of (limit, key, shard), if its encoding fits in MEMORY_IDENTITY_BYTES: then true
// and *out is set; else false and *out is untouched (the glue then uses the digest form).
[[nodiscard]] bool memory_identity_inline(const char *limit, std::size_t limit_len, const char *key,
                                          std::size_t key_len, int shard, std::uint64_t seed,
                                          MemoryIdentity *out) noexcept;

// The digest identity: `digest` is SHA-256(header, limit, key) as described above.
[[nodiscard]] MemoryIdentity memory_identity_from_digest(const char *limit, std::size_t limit_len,
                                                         const unsigned char *digest, std::uint64_t seed) noexcept;

// Recomputes identity->hash under another seed (entries saved by one server and loaded by the next one,
// whose table has a new seed). limit_hash does not depend on the seed.
void memory_identity_rehash(MemoryIdentity *identity, std::uint64_t seed) noexcept;

// Whether an identity read back from a file is well formed: a digest of MEMORY_DIGEST_BYTES, or an
// inline encoding whose header is complete and whose lengths add up to `length`; zero beyond length.
// (The hashes are not checked: the loader recomputes `hash` with memory_identity_rehash.)
[[nodiscard]] bool memory_identity_valid(const MemoryIdentity &identity) noexcept;

// The key bytes of an inline identity (within identity.bytes); false for a digest or a malformed identity,
// whose key cannot be read back.
[[nodiscard]] bool memory_identity_key(const MemoryIdentity &identity, const unsigned char **key,
                                       std::size_t *key_len) noexcept;

// Same form (inline or digest), same length, same bytes (a length beyond MEMORY_IDENTITY_BYTES equals
// nothing). The hashes are not compared: equal identities under the same seed have equal hashes.
[[nodiscard]] bool memory_identity_equal(const MemoryIdentity &a, const MemoryIdentity &b) noexcept;

// The hash of a limit's name (MemoryIdentity::limit_hash).
[[nodiscard]] std::uint64_t memory_limit_hash(const char *limit, std::size_t limit_len) noexcept;

// The 64-bit hash both are made of: FNV-1a over the bytes, started from a state derived from the seed,
// then a finalizer so that every output bit depends on every input bit (FNV-1a alone mixes its high bits
// poorly, and placement uses both ends of the hash).
[[nodiscard]] std::uint64_t memory_hash_bytes(const unsigned char *data, std::size_t size, std::uint64_t seed) noexcept;

}  // namespace pg_ratelimit::core
