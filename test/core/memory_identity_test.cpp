// Identities of the shared-memory state table (core/memory_identity.hpp): the encoding is unambiguous,
// inline and digest forms never meet, hashes depend on what they should and only on that.
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "core/memory_identity.hpp"

namespace pg_ratelimit::core {
namespace {

constexpr std::uint64_t kSeed = 0x1234567890abcdefULL;

MemoryIdentity Inline(const std::string &limit, const std::string &key, int shard, std::uint64_t seed = kSeed) {
    MemoryIdentity identity{};
    EXPECT_TRUE(memory_identity_inline(limit.data(), limit.size(), key.data(), key.size(), shard, seed, &identity))
        << limit << "/" << key;
    return identity;
}

// What the glue hashes for the digest form, as one string: header, limit, key.
std::string Encoding(const std::string &limit, const std::string &key, int shard) {
    unsigned char header[MEMORY_IDENTITY_HEADER_MAX];
    const std::size_t n = memory_identity_header(limit.size(), key.size(), shard, header);
    return std::string(reinterpret_cast<const char *>(header), n) + limit + key;
}

TEST(MemoryIdentity, SplitsOfTheSameBytesDiffer) {
    const MemoryIdentity ab_c = Inline("ab", "c", 0);
    const MemoryIdentity a_bc = Inline("a", "bc", 0);
    EXPECT_FALSE(memory_identity_equal(ab_c, a_bc));
    EXPECT_NE(ab_c.hash, a_bc.hash);
    EXPECT_NE(ab_c.limit_hash, a_bc.limit_hash);
    EXPECT_TRUE(memory_identity_equal(ab_c, Inline("ab", "c", 0)));
    EXPECT_EQ(ab_c.hash, Inline("ab", "c", 0).hash);
    // Empty limit or key are triples like any other.
    EXPECT_FALSE(memory_identity_equal(Inline("", "abc", 0), Inline("abc", "", 0)));
}

TEST(MemoryIdentity, ShardsDiffer) {
    const MemoryIdentity zero = Inline("api", "user-1", 0);
    for (const int shard : {1, 2, 255, 256, -1}) {
        const MemoryIdentity other = Inline("api", "user-1", shard);
        EXPECT_FALSE(memory_identity_equal(zero, other)) << shard;
        EXPECT_NE(zero.hash, other.hash) << shard;
        EXPECT_EQ(zero.limit_hash, other.limit_hash) << shard;
    }
}

// Every triple of a small universe (all splits of short strings into limit and key, several shards) has
// an encoding of its own, and equal encodings are exactly equal identities.
TEST(MemoryIdentity, EncodingIsInjective) {
    std::set<std::string> encodings;
    int triples = 0;
    const std::string texts[] = {
        "", "a", "ab", "abc", "aab", std::string(1, '\0'), std::string("\x01\x02", 2), std::string(3, '\x80')};
    for (const std::string &whole : texts) {
        for (std::size_t split = 0; split <= whole.size(); ++split) {
            for (const int shard : {0, 1, 2, 127, 128, 255}) {
                const std::string limit = whole.substr(0, split);
                const std::string key = whole.substr(split);
                const std::string encoding = Encoding(limit, key, shard);
                EXPECT_TRUE(encodings.insert(encoding).second) << "duplicate encoding";
                const MemoryIdentity identity = Inline(limit, key, shard);
                ASSERT_EQ(identity.length, encoding.size());
                EXPECT_EQ(std::memcmp(identity.bytes, encoding.data(), encoding.size()), 0);
                EXPECT_TRUE(memory_identity_valid(identity));
                ++triples;
            }
        }
    }
    EXPECT_EQ(static_cast<int>(encodings.size()), triples);
}

TEST(MemoryIdentity, InlineUpToTheCapacity) {
    // A 3-byte header (lengths and shard below 128): 61 bytes of limit and key fit, 62 do not.
    const std::string limit = "limit";
    MemoryIdentity identity{};
    const std::string fits(61 - limit.size(), 'k');
    ASSERT_TRUE(memory_identity_inline(limit.data(), limit.size(), fits.data(), fits.size(), 3, kSeed, &identity));
    EXPECT_EQ(identity.length, MEMORY_IDENTITY_BYTES);
    const MemoryIdentity before = identity;
    const std::string too_long(62 - limit.size(), 'k');
    EXPECT_FALSE(
        memory_identity_inline(limit.data(), limit.size(), too_long.data(), too_long.size(), 3, kSeed, &identity));
    EXPECT_TRUE(memory_identity_equal(identity, before));  // untouched
    // Huge lengths are refused before their sum could wrap.
    EXPECT_FALSE(memory_identity_inline(limit.data(), SIZE_MAX, fits.data(), 2, 0, kSeed, &identity));
    // Lengths of 128 and more take two header bytes.
    unsigned char header[MEMORY_IDENTITY_HEADER_MAX];
    EXPECT_EQ(memory_identity_header(5, 127, 0, header), 3U);
    EXPECT_EQ(memory_identity_header(5, 128, 0, header), 4U);
    EXPECT_EQ(memory_identity_header(SIZE_MAX, SIZE_MAX, -1, header), MEMORY_IDENTITY_HEADER_MAX);
}

TEST(MemoryIdentity, DigestNeverEqualsInline) {
    // An inline identity of exactly 32 bytes, and a digest whose bytes are those 32 bytes.
    const std::string limit = "l";
    const std::string key(32 - 3 - limit.size(), 'x');
    const MemoryIdentity inline_form = Inline(limit, key, 0);
    ASSERT_EQ(inline_form.length, MEMORY_DIGEST_BYTES);
    const MemoryIdentity digest_form =
        memory_identity_from_digest(limit.data(), limit.size(), inline_form.bytes, kSeed);
    EXPECT_TRUE(digest_form.digest);
    EXPECT_EQ(digest_form.length, MEMORY_DIGEST_BYTES);
    EXPECT_FALSE(memory_identity_equal(inline_form, digest_form));
    EXPECT_NE(inline_form.hash, digest_form.hash);
    EXPECT_EQ(inline_form.limit_hash, digest_form.limit_hash);
    EXPECT_TRUE(memory_identity_valid(digest_form));
    // The same digest twice is the same identity.
    const MemoryIdentity again = memory_identity_from_digest(limit.data(), limit.size(), inline_form.bytes, kSeed);
    EXPECT_TRUE(memory_identity_equal(digest_form, again));
    EXPECT_EQ(digest_form.hash, again.hash);
}

TEST(MemoryIdentity, SeedMovesPlacementOnly) {
    const MemoryIdentity a = Inline("api", "k", 0, 1);
    MemoryIdentity b = Inline("api", "k", 0, 2);
    EXPECT_TRUE(memory_identity_equal(a, b));
    EXPECT_NE(a.hash, b.hash);
    EXPECT_EQ(a.limit_hash, b.limit_hash);
    EXPECT_EQ(a.limit_hash, memory_limit_hash("api", 3));
    memory_identity_rehash(&b, 1);
    EXPECT_EQ(a.hash, b.hash);
}

TEST(MemoryIdentity, ValidityOfLoadedIdentities) {
    MemoryIdentity identity = Inline("api", "key", 7);
    EXPECT_TRUE(memory_identity_valid(identity));
    MemoryIdentity empty{};
    EXPECT_FALSE(memory_identity_valid(empty));
    MemoryIdentity bad = identity;
    bad.length = 65;
    EXPECT_FALSE(memory_identity_valid(bad));
    bad = identity;
    bad.bytes[1] = 4;  // key length 4, one byte more than there is
    EXPECT_FALSE(memory_identity_valid(bad));
    bad = identity;
    bad.bytes[identity.length] = 1;  // garbage beyond length
    EXPECT_FALSE(memory_identity_valid(bad));
    bad = identity;
    bad.digest = true;  // a digest must be 32 bytes
    EXPECT_FALSE(memory_identity_valid(bad));
    // A non-shortest varint (0x83 0x00 for 3) is refused: one triple, one encoding.
    MemoryIdentity long_form{};
    const unsigned char bytes[] = {0x83, 0x00, 0x00, 0x00, 'a', 'p', 'i'};
    std::memcpy(long_form.bytes, bytes, sizeof bytes);
    long_form.length = sizeof bytes;
    EXPECT_FALSE(memory_identity_valid(long_form));
}

// Placement uses the high bits (partition) and the low bits (slot): both spread evenly over sequential
// keys, the worst case of FNV-1a alone.
TEST(MemoryIdentity, HashSpreadsBothEnds) {
    constexpr int kKeys = 1 << 16;
    constexpr int kBuckets = 64;
    std::vector<int> high(kBuckets, 0);
    std::vector<int> low(kBuckets, 0);
    for (int i = 0; i < kKeys; ++i) {
        const MemoryIdentity identity = Inline("limit", "user:" + std::to_string(i), 0);
        ++high[identity.hash >> 58];
        ++low[identity.hash & (kBuckets - 1)];
    }
    // 1024 expected per bucket; a standard deviation is 32.
    for (int b = 0; b < kBuckets; ++b) {
        EXPECT_GT(high[b], 1024 - 200) << b;
        EXPECT_LT(high[b], 1024 + 200) << b;
        EXPECT_GT(low[b], 1024 - 200) << b;
        EXPECT_LT(low[b], 1024 + 200) << b;
    }
    // Flipping any one input bit flips about half the output bits.
    std::mt19937_64 random(5);
    double flipped = 0;
    int trials = 0;
    for (int t = 0; t < 200; ++t) {
        unsigned char data[16];
        for (unsigned char &byte : data) byte = static_cast<unsigned char>(random());
        const std::uint64_t base = memory_hash_bytes(data, sizeof data, kSeed);
        for (int bit = 0; bit < 128; ++bit) {
            data[bit / 8] ^= static_cast<unsigned char>(1U << (bit % 8));
            flipped += __builtin_popcountll(base ^ memory_hash_bytes(data, sizeof data, kSeed));
            data[bit / 8] ^= static_cast<unsigned char>(1U << (bit % 8));
            ++trials;
        }
    }
    EXPECT_NEAR(flipped / trials, 32.0, 1.0);
}

}  // namespace
}  // namespace pg_ratelimit::core
