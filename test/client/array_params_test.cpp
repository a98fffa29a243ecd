// The binary array parameters, byte by byte (what array_recv reads; the server tests send them for real).
#include "array_params.hpp"

#include <gtest/gtest.h>

#include <limits>
#include <string>

namespace {

using pg_ratelimit::detail::float8_array_param;
using pg_ratelimit::detail::text_array_param;

std::string bytes(std::initializer_list<int> values) {
    std::string out;
    for (const int v : values) out += static_cast<char>(v);
    return out;
}

}  // namespace

TEST(ArrayParams, TextElementsTravelAsLengthAndBytesUnescaped) {
    const std::string expected = bytes({0, 0, 0, 1,  /* one dimension */
                                        0, 0, 0, 0,  /* no NULLs */
                                        0, 0, 0, 25, /* text */
                                        0, 0, 0, 3,  /* three elements */
                                        0, 0, 0, 1,  /* from 1 */
                                        0, 0, 0, 3}) +
                                 "a,\"" + bytes({0, 0, 0, 0}) /* the empty string */ + bytes({0, 0, 0, 4}) + "NULL";
    EXPECT_EQ(text_array_param({"a,\"", "", "NULL"}), expected);
}

TEST(ArrayParams, EmptyVectorIsTheEmptyArray) {
    EXPECT_EQ(text_array_param({}), bytes({0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 25}));
    EXPECT_EQ(float8_array_param({}), bytes({0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2, 0xbd}));
}

TEST(ArrayParams, Float8ElementsAreTheirBigEndianBits) {
    const std::string header = bytes({0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 2, 0xbd, 0, 0, 0, 2, 0, 0, 0, 1});
    const std::string one = bytes({0, 0, 0, 8, 0x3f, 0xf0, 0, 0, 0, 0, 0, 0});
    const std::string minus_infinity = bytes({0, 0, 0, 8, 0xff, 0xf0, 0, 0, 0, 0, 0, 0});
    EXPECT_EQ(float8_array_param({1.0, -std::numeric_limits<double>::infinity()}), header + one + minus_infinity);
}
