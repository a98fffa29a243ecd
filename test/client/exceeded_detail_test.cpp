// Reading rate_limit_enforce's DETAIL (SQLSTATE RL001) back, and RateLimitExceeded built from it.
#include <gtest/gtest.h>

#include <pg_ratelimit/errors.hpp>

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
