// Reading rate_limit_enforce's DETAIL (SQLSTATE RL001) back, and RateLimitExceeded built from it.
#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <pg_ratelimit/errors.hpp>
#include <string>

#include "exceeded_detail.hpp"

using pg_ratelimit::detail::parse_exceeded_detail;
using std::chrono::microseconds;

TEST(ExceededDetail, ReadsLimitKeyAndRetryAfter) {
    const auto detail = parse_exceeded_detail(
        "ERROR:  rate limit \"api\" exceeded for key \"k\"\nDETAIL:  {\"limit\":\"api\",\"key\":\"k\","
        "\"retry_after\":1.234567}\nHINT:  Try again in 1.234567 seconds.\n");
    ASSERT_TRUE(detail.has_value());
    EXPECT_EQ(detail->limit, "api");
    EXPECT_EQ(detail->key, "k");
    EXPECT_EQ(detail->retry_after, microseconds{1234567});
}

TEST(ExceededDetail, UnescapesWhatEscapeJsonWrites) {
    // A key with a quote, a semicolon, a backslash, a newline, a tab, a control byte, braces and UTF-8.
    const auto detail = parse_exceeded_detail(
        "ERROR:  rate limit \"l\\\"x\" exceeded for key \"a\\\"b;c\\\\d\\ne...\"\n"
        "DETAIL:  "
        "{\"limit\":\"l\\\"x\",\"key\":\"a\\\"b;c\\\\d\\ne\\tf\\u0001{}\xc3\xa9\",\"retry_after\":3600.000000}\n");
    ASSERT_TRUE(detail.has_value());
    EXPECT_EQ(detail->limit, "l\"x");
    EXPECT_EQ(detail->key, "a\"b;c\\d\ne\tf\x01{}\xc3\xa9");
    EXPECT_EQ(detail->retry_after, microseconds{3600000000});
}

TEST(ExceededDetail, TranslatedLabelAndNoHint) {
    const auto detail =
        parse_exceeded_detail("ERREUR:  ...\nD\xc3\x89TAIL : {\"limit\":\"x\",\"key\":\"\",\"retry_after\":0.000001}");
    ASSERT_TRUE(detail.has_value());
    EXPECT_EQ(detail->key, "");
    EXPECT_EQ(detail->retry_after, microseconds{1});
}

namespace {

// A DETAIL as the server writes it, with retry_after's text as given.
std::string detail_with(const std::string &retry_after) {
    return "ERROR:  rate limit \"q\" exceeded for key \"k\"\nDETAIL:  {\"limit\":\"q\",\"key\":\"k\","
           "\"retry_after\":" +
           retry_after + "}\nHINT:  Try again in " + retry_after + " seconds.\n";
}

// retry_after in microseconds, as a number (gtest prints a duration as its bytes).
std::int64_t retry_after_of(const std::string &retry_after) {
    const auto detail = parse_exceeded_detail(detail_with(retry_after));
    if (!detail.has_value()) {
        ADD_FAILURE() << "refused retry_after " << retry_after;
        return -1;
    }
    EXPECT_EQ(detail->limit, "q");
    EXPECT_EQ(detail->key, "k");
    return detail->retry_after.count();
}

}  // namespace

// Every retry_after the server can send, up to its MAX_DURATION (extension/core/limit.hpp: 100 * 366 days
// * 1000 = 3162240000000 s, 13 digits, a lifetime quota's), exactly.
TEST(ExceededDetail, ReadsEveryRetryAfterTheServerCanSend) {
    EXPECT_EQ(retry_after_of("0.000000"), 0);
    EXPECT_EQ(retry_after_of("0.000001"), 1);
    EXPECT_EQ(retry_after_of("999999999999.999999"), 999999999999999999);  // 12 digits
    EXPECT_EQ(retry_after_of("1000000000000.000000"), 1000000000000000000);
    EXPECT_EQ(retry_after_of("3162240000000.000000"), 3162240000000000000);  // MAX_DURATION
    EXPECT_EQ(retry_after_of("3162239999999.999999"), 3162239999999999999);
}

// Beyond what microseconds can hold (no server sends it): saturated, never wrapped, never refused.
TEST(ExceededDetail, SaturatesBeyondMicroseconds) {
    constexpr std::int64_t max = std::numeric_limits<std::int64_t>::max();
    EXPECT_EQ(retry_after_of("9223372036854.775807"), max);  // exactly the largest
    EXPECT_EQ(retry_after_of("9223372036854.775806"), max - 1);
    EXPECT_EQ(retry_after_of("9223372036854.775808"), max);
    EXPECT_EQ(retry_after_of("9223372036855.000000"), max);
    EXPECT_EQ(retry_after_of("18446744073709551616.000000"), max);  // past uint64 too
    EXPECT_EQ(retry_after_of("99999999999999999999999999999999.999999"), max);
    EXPECT_EQ(retry_after_of("0000000000000000000000003.000001"), 3000001);  // leading zeros
}

TEST(ExceededDetail, RefusesAnythingElse) {
    EXPECT_FALSE(parse_exceeded_detail("").has_value());
    EXPECT_FALSE(parse_exceeded_detail("ERROR:  no detail\n").has_value());
    EXPECT_FALSE(parse_exceeded_detail("ERROR:  x\nHINT:  {nothing}\n").has_value());
    // Fields missing, reordered, or retry_after not as the server writes it.
    EXPECT_FALSE(parse_exceeded_detail("E\nD: {\"limit\":\"a\",\"retry_after\":1.000000}\n").has_value());
    EXPECT_FALSE(parse_exceeded_detail("E\nD: {\"key\":\"k\",\"limit\":\"a\",\"retry_after\":1.000000}\n").has_value());
    EXPECT_FALSE(parse_exceeded_detail("E\nD: {\"limit\":\"a\",\"key\":\"k\",\"retry_after\":1.5}\n").has_value());
    EXPECT_FALSE(
        parse_exceeded_detail("E\nD: {\"limit\":\"a\",\"key\":\"k\",\"retry_after\":-1.000000}\n").has_value());
    // Long values are not malformed ones: still digits, a point and exactly six digits.
    EXPECT_FALSE(parse_exceeded_detail(detail_with("3162240000000")).has_value());
    EXPECT_FALSE(parse_exceeded_detail(detail_with("3162240000000.00000")).has_value());
    EXPECT_FALSE(parse_exceeded_detail(detail_with("3162240000000.0000000")).has_value());
    EXPECT_FALSE(parse_exceeded_detail(detail_with("3.16224e12")).has_value());
    EXPECT_FALSE(parse_exceeded_detail(detail_with(".000001")).has_value());
    EXPECT_FALSE(parse_exceeded_detail(detail_with("31622400000x0.000000")).has_value());
    EXPECT_FALSE(parse_exceeded_detail(detail_with("\"3162240000000.000000\"")).has_value());
    EXPECT_FALSE(
        parse_exceeded_detail("E\nD: {\"limit\":\"a\",\"key\":\"k\",\"retry_after\":1.000000} x\n").has_value());
    EXPECT_FALSE(
        parse_exceeded_detail("E\nD: {\"limit\":\"a\",\"key\":\"k\\q\",\"retry_after\":1.000000}\n").has_value());
    EXPECT_FALSE(parse_exceeded_detail("E\nD: {\"limit\":\"a\",\"key\":\"k").has_value());
    // The object must be on the DETAIL line, not on a later one (a key in a CONTEXT line, say).
    EXPECT_FALSE(
        parse_exceeded_detail("E\nD: none\nC: {\"limit\":\"a\",\"key\":\"k\",\"retry_after\":1.000000}\n").has_value());
}

TEST(ExceededDetail, RateLimitExceededCarriesIt) {
    const pg_ratelimit::RateLimitExceeded error(
        "ERROR:  rate limit \"api\" exceeded for key \"k\"\nDETAIL:  {\"limit\":\"api\",\"key\":\"k\","
        "\"retry_after\":20.000000}\nHINT:  ...\n",
        "SELECT", "RL001");
    EXPECT_EQ(error.sqlstate(), "RL001");
    EXPECT_EQ(error.message(), "rate limit \"api\" exceeded for key \"k\"");
    EXPECT_EQ(error.limit(), "api");
    EXPECT_EQ(error.key(), "k");
    EXPECT_EQ(error.retry_after(), std::chrono::seconds{20});
}

// A lifetime quota's denial: the 13-digit retry_after no longer loses the limit and the key with it.
TEST(ExceededDetail, RateLimitExceededCarriesTheLongestRetryAfter) {
    const pg_ratelimit::RateLimitExceeded error(detail_with("3162240000000.000000"), "SELECT", "RL001");
    EXPECT_EQ(error.limit(), "q");
    EXPECT_EQ(error.key(), "k");
    EXPECT_EQ(error.retry_after().count(), 3162240000000000000);
}
