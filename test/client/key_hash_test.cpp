// The client's hashtext (key_hash.hpp) against values PostgreSQL 15's hashtext() returned for the same keys
// (SELECT hashtext(k)): the empty key, one byte, a partial last block, exactly one 12-byte block, one more
// byte, multi-byte UTF-8. test/scale_out compares 20,000 more keys with a live server's.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>

#include "key_hash.hpp"

namespace {

using pg_ratelimit::detail::hashtext;
using pg_ratelimit::detail::partition_of;

std::int32_t as_server_returns(const std::string &key) { return static_cast<std::int32_t>(hashtext(key)); }

TEST(KeyHash, SameAsPostgresHashtext) {
    EXPECT_EQ(as_server_returns(""), -1477818771);
    EXPECT_EQ(as_server_returns("a"), 1075015857);
    EXPECT_EQ(as_server_returns("user1"), -335245252);
    EXPECT_EQ(as_server_returns("é"), -983094517);
    EXPECT_EQ(as_server_returns("abcdefghijkl"), -1586087212);
    EXPECT_EQ(as_server_returns("abcdefghijklm"), 405849808);
    EXPECT_EQ(as_server_returns("日本語のキー"), -1141945375);
    EXPECT_EQ(as_server_returns("a key with spaces and 😀"), -1084961244);
}

TEST(KeyHash, PartitionIsTheLowBits) {
    EXPECT_EQ(partition_of("user1", 1), 0U);
    EXPECT_EQ(partition_of("user1", 2), static_cast<std::size_t>(hashtext("user1") & 1U));
    EXPECT_EQ(partition_of("user1", 4), static_cast<std::size_t>(hashtext("user1") & 3U));
    EXPECT_EQ(partition_of("a", 8), static_cast<std::size_t>(1075015857U & 7U));
}

}  // namespace
