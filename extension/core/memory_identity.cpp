// Identities of the shared-memory state table (memory_identity.hpp).
#include "core/memory_identity.hpp"

#include <cstring>

#include "core/hash.hpp"

namespace pg_ratelimit::core {
namespace {

std::size_t put_varint(unsigned char *out, std::uint64_t value) noexcept {
    std::size_t n = 0;
    while (value >= 0x80) {
        out[n++] = static_cast<unsigned char>((value & 0x7f) | 0x80);
        value >>= 7;
    }
    out[n++] = static_cast<unsigned char>(value);
    return n;
}

// Reads a varint of at most max_bytes bytes at data[*pos], below end; false if it does not end in time or
// is not the shortest form (put_varint never writes a trailing zero byte: one triple, one encoding).
bool get_varint(const unsigned char *data, std::size_t end, std::size_t *pos, std::size_t max_bytes,
                std::uint64_t *value) noexcept {
    std::uint64_t result = 0;
    for (std::size_t i = 0; i < max_bytes && *pos < end; ++i) {
        const unsigned char byte = data[(*pos)++];
        result |= static_cast<std::uint64_t>(byte & 0x7f) << (7 * i);
        if ((byte & 0x80) == 0) {
            if (byte == 0 && i > 0) return false;
            *value = result;
            return true;
        }
    }
    return false;
}

// The placement hash: the form flag first, so that inline and digest identities with the same bytes
// hash apart.
std::uint64_t identity_hash(bool digest, const unsigned char *bytes, std::size_t length, std::uint64_t seed) noexcept {
    const unsigned char form = digest ? 1 : 0;
    std::uint64_t state = FNV_OFFSET ^ mix64(seed);
    state = fnv1a(state, &form, 1);
    return mix64(fnv1a(state, bytes, length));
}

}  // namespace

std::uint64_t memory_hash_bytes(const unsigned char *data, std::size_t size, std::uint64_t seed) noexcept {
    // mix64(0) == 0: seed 0 starts from the plain FNV offset basis.
    return mix64(fnv1a(FNV_OFFSET ^ mix64(seed), data, size));
}

std::uint64_t memory_limit_hash(const char *limit, std::size_t limit_len) noexcept {
    return memory_hash_bytes(reinterpret_cast<const unsigned char *>(limit), limit_len, 0);
}

std::size_t memory_identity_header(std::size_t limit_len, std::size_t key_len, int shard, unsigned char *out) noexcept {
    std::size_t n = put_varint(out, limit_len);
    n += put_varint(out + n, key_len);
    // Every int has its own uint32 (two's complement), so negative shards stay distinct too.
    n += put_varint(out + n, static_cast<std::uint32_t>(shard));
    return n;
}

bool memory_identity_inline(const char *limit, std::size_t limit_len, const char *key, std::size_t key_len, int shard,
                            std::uint64_t seed, MemoryIdentity *out) noexcept {
    // Checked one by one first: the sum of two huge lengths could wrap.
    if (limit_len > MEMORY_IDENTITY_BYTES || key_len > MEMORY_IDENTITY_BYTES) return false;
    unsigned char header[MEMORY_IDENTITY_HEADER_MAX];
    const std::size_t header_len = memory_identity_header(limit_len, key_len, shard, header);
    const std::size_t length = header_len + limit_len + key_len;
    if (length > MEMORY_IDENTITY_BYTES) return false;
    MemoryIdentity identity{};
    std::memcpy(identity.bytes, header, header_len);
    if (limit_len > 0) std::memcpy(identity.bytes + header_len, limit, limit_len);
    if (key_len > 0) std::memcpy(identity.bytes + header_len + limit_len, key, key_len);
    identity.length = static_cast<std::uint16_t>(length);
    identity.digest = false;
    identity.hash = identity_hash(false, identity.bytes, length, seed);
    identity.limit_hash = memory_limit_hash(limit, limit_len);
    *out = identity;
    return true;
}

MemoryIdentity memory_identity_from_digest(const char *limit, std::size_t limit_len, const unsigned char *digest,
                                           std::uint64_t seed) noexcept {
    MemoryIdentity identity{};
    std::memcpy(identity.bytes, digest, MEMORY_DIGEST_BYTES);
    identity.length = MEMORY_DIGEST_BYTES;
    identity.digest = true;
    identity.hash = identity_hash(true, identity.bytes, MEMORY_DIGEST_BYTES, seed);
    identity.limit_hash = memory_limit_hash(limit, limit_len);
    return identity;
}

void memory_identity_rehash(MemoryIdentity *identity, std::uint64_t seed) noexcept {
    // A length read from a damaged file must not read beyond the bytes (restore refuses such identities).
    const std::size_t length = identity->length < MEMORY_IDENTITY_BYTES ? identity->length : MEMORY_IDENTITY_BYTES;
    identity->hash = identity_hash(identity->digest, identity->bytes, length, seed);
}

bool memory_identity_valid(const MemoryIdentity &identity) noexcept {
    const std::size_t length = identity.length;
    if (length == 0 || length > MEMORY_IDENTITY_BYTES) return false;
    for (std::size_t i = length; i < MEMORY_IDENTITY_BYTES; ++i)
        if (identity.bytes[i] != 0) return false;
    if (identity.digest) return length == MEMORY_DIGEST_BYTES;
    std::size_t pos = 0;
    std::uint64_t limit_len = 0;
    std::uint64_t key_len = 0;
    std::uint64_t shard = 0;
    if (!get_varint(identity.bytes, length, &pos, 10, &limit_len) ||
        !get_varint(identity.bytes, length, &pos, 10, &key_len) || !get_varint(identity.bytes, length, &pos, 5, &shard))
        return false;
    // Both lengths are below 2^64 - 64 here only if each fits in the identity: compare without wrapping.
    return shard <= UINT32_MAX && limit_len <= length && key_len <= length && pos + limit_len + key_len == length;
}

bool memory_identity_key(const MemoryIdentity &identity, const unsigned char **key, std::size_t *key_len) noexcept {
    if (!memory_identity_valid(identity) || identity.digest) return false;
    std::size_t pos = 0;
    std::uint64_t limit_bytes = 0;
    std::uint64_t key_bytes = 0;
    std::uint64_t shard = 0;
    (void)get_varint(identity.bytes, identity.length, &pos, 10, &limit_bytes);
    (void)get_varint(identity.bytes, identity.length, &pos, 10, &key_bytes);
    (void)get_varint(identity.bytes, identity.length, &pos, 5, &shard);
    *key = identity.bytes + pos + limit_bytes;
    *key_len = key_bytes;
    return true;
}

bool memory_identity_equal(const MemoryIdentity &a, const MemoryIdentity &b) noexcept {
    return a.digest == b.digest && a.length == b.length && a.length <= MEMORY_IDENTITY_BYTES &&
           std::memcmp(a.bytes, b.bytes, a.length) == 0;
}

}  // namespace pg_ratelimit::core
