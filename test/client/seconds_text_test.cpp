// The conversion of the server's `extract(epoch FROM interval)` text to microseconds (an internal of the
// library, client/src/seconds_text.hpp): no server.
#include <gtest/gtest.h>

#include <limits>
#include <stdexcept>

#include "seconds_text.hpp"

using pg_ratelimit::detail::micros_from_seconds;
using std::chrono::microseconds;

namespace {
constexpr auto MAX = std::numeric_limits<microseconds::rep>::max();
constexpr auto MIN = std::numeric_limits<microseconds::rep>::min();
}  // namespace

TEST(SecondsText, NumericTextIsExact) {
    EXPECT_EQ(micros_from_seconds("0.000000"), microseconds{0});
    EXPECT_EQ(micros_from_seconds("20.000000"), microseconds{20'000'000});
    EXPECT_EQ(micros_from_seconds("19.999982"), microseconds{19'999'982});
    EXPECT_EQ(micros_from_seconds("0.000001"), microseconds{1});
    EXPECT_EQ(micros_from_seconds("-1.500000"), microseconds{-1'500'000});
    EXPECT_EQ(micros_from_seconds("-0.000000"), microseconds{0});
    EXPECT_EQ(micros_from_seconds("3153600000.000000"), microseconds{3'153'600'000'000'000});
    EXPECT_EQ(micros_from_seconds("86400"), microseconds{86'400'000'000});  // float8 text of older servers
    EXPECT_EQ(micros_from_seconds("2.5"), microseconds{2'500'000});
}

TEST(SecondsText, MoreThanSixDecimalsRoundToTheNearestMicrosecond) {
    EXPECT_EQ(micros_from_seconds("1.0000004"), microseconds{1'000'000});
    EXPECT_EQ(micros_from_seconds("1.0000005"), microseconds{1'000'001});
    EXPECT_EQ(micros_from_seconds("-1.00000099"), microseconds{-1'000'001});
}

TEST(SecondsText, SaturatesInsteadOfOverflowing) {
    EXPECT_EQ(micros_from_seconds("9223372036854.775807"), microseconds{MAX});
    EXPECT_EQ(micros_from_seconds("9223372036854.775808"), microseconds{MAX});
    EXPECT_EQ(micros_from_seconds("-9223372036854.775808"), microseconds{MIN});
    EXPECT_EQ(micros_from_seconds("5617252800000000.000000"), microseconds{MAX});
    EXPECT_EQ(micros_from_seconds("123456789012345678901234567890"), microseconds{MAX});
    EXPECT_EQ(micros_from_seconds("-123456789012345678901234567890.5"), microseconds{MIN});
}

TEST(SecondsText, Float8FormsGoThroughDouble) {
    EXPECT_EQ(micros_from_seconds("1.5e+06"), microseconds{1'500'000'000'000});
    EXPECT_EQ(micros_from_seconds("1e-07"), microseconds{0});
    EXPECT_EQ(micros_from_seconds("1e+20"), microseconds{MAX});
    EXPECT_EQ(micros_from_seconds("Infinity"), microseconds{MAX});
    EXPECT_EQ(micros_from_seconds("-Infinity"), microseconds{MIN});
}

TEST(SecondsText, RejectsWhatIsNoNumber) {
    EXPECT_THROW((void)micros_from_seconds(""), std::invalid_argument);
    EXPECT_THROW((void)micros_from_seconds("NaN"), std::invalid_argument);
    EXPECT_THROW((void)micros_from_seconds("00:00:20"), std::invalid_argument);
    EXPECT_THROW((void)micros_from_seconds("12 s"), std::invalid_argument);
}
