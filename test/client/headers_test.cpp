// HTTP fields of a Decision: pure formatting, no server.
#include <gtest/gtest.h>

#include <limits>
#include <pg_ratelimit/client.hpp>
#include <set>

namespace pr = pg_ratelimit;
using std::chrono::microseconds;
using std::chrono::seconds;

namespace {

pr::Decision denied() {
    pr::Decision d;
    d.allowed = false;
    d.remaining = 0;
    d.retry_after = microseconds{1'200'000};  // 1.2 s
    d.reset_after = microseconds{59'000'001};
    d.limit = "send_message";
    d.policy = pr::Policy{10, seconds{60}, 10};
    return d;
}

std::string field(const std::vector<pr::HttpField> &fields, const std::string &name) {
    for (const auto &f : fields)
        if (f.name == name) return f.value;
    return "<absent>";
}

}  // namespace

TEST(Headers, DeniedDecisionHasAllThreeFields) {
    const auto fields = denied().headers();
    const std::vector<pr::HttpField> expected = {{"RateLimit-Policy", "\"send_message\";q=10;w=60"},
                                                 {"RateLimit", "\"send_message\";r=0;t=60"},
                                                 {"Retry-After", "2"}};
    EXPECT_EQ(fields, expected);
}

TEST(Headers, AllowedDecisionHasNoRetryAfter) {
    pr::Decision d = denied();
    d.allowed = true;
    d.remaining = 7;
    d.retry_after = microseconds{0};
    d.reset_after = seconds{18};
    const auto fields = d.headers();
    EXPECT_EQ(field(fields, "Retry-After"), "<absent>");
    EXPECT_EQ(field(fields, "RateLimit"), "\"send_message\";r=7;t=18");
}

TEST(Headers, SecondsAreRoundedUpSoClientsAreNeverEarly) {
    pr::Decision d = denied();
    d.retry_after = microseconds{1};
    EXPECT_EQ(pr::retry_after_field(d), "1");
    d.retry_after = seconds{2};
    EXPECT_EQ(pr::retry_after_field(d), "2");
    d.retry_after = microseconds{2'000'001};
    EXPECT_EQ(pr::retry_after_field(d), "3");
    d.retry_after = microseconds{0};
    EXPECT_EQ(pr::retry_after_field(d), "0");
}

TEST(Headers, QuotaIsWholeCapacityAndWindowAtLeastOneSecond) {
    pr::Decision d = denied();
    d.policy = pr::Policy{5, std::chrono::milliseconds{500}, 2.5};
    EXPECT_EQ(pr::ratelimit_policy_field(d), "\"send_message\";q=2;w=1");
    d.policy = pr::Policy{1, seconds{86400}, 1e12};
    EXPECT_EQ(pr::ratelimit_policy_field(d), "\"send_message\";q=1000000000000;w=86400");
}

TEST(Headers, UnknownPolicyOmitsThePolicyField) {
    pr::Decision d = denied();
    d.policy.reset();
    const auto fields = d.headers();
    EXPECT_EQ(field(fields, "RateLimit-Policy"), "<absent>");
    EXPECT_EQ(pr::ratelimit_policy_field(d), "");
    EXPECT_EQ(fields.size(), 2u);
}

TEST(Headers, LimitNameIsAValidStructuredFieldString) {
    pr::Decision d = denied();
    d.limit = "a\"b\\c\xc3\xa9\n";  // quote, backslash, UTF-8 e-acute, newline
    EXPECT_EQ(pr::ratelimit_field(d), "\"a\\\"b\\\\c???\";r=0;t=60");
}

TEST(Headers, HugeDurationsStayWithinStructuredFieldIntegers) {
    pr::Decision d = denied();
    d.retry_after = microseconds::max();  // 9223372036854.775807 s, rounded up
    d.reset_after = d.retry_after;
    EXPECT_EQ(pr::retry_after_field(d), "9223372036855");
    EXPECT_EQ(pr::ratelimit_field(d), "\"send_message\";r=0;t=9223372036855");
    d.remaining = std::numeric_limits<std::int64_t>::max();
    EXPECT_EQ(pr::ratelimit_field(d), "\"send_message\";r=999999999999999;t=9223372036855");
}

TEST(Headers, JitterSpreadsRetryAfterWithinBounds) {
    const pr::Decision d = denied();
    std::set<std::string> seen;
    for (int i = 0; i < 200; ++i) {
        const std::string value = field(d.headers(seconds{5}), "Retry-After");
        const int v = std::stoi(value);
        EXPECT_GE(v, 2);
        EXPECT_LE(v, 7);
        seen.insert(value);
    }
    EXPECT_GT(seen.size(), 3u);  // 200 draws from 6 values: all but impossible to see fewer
    EXPECT_EQ(field(d.headers(seconds{0}), "Retry-After"), "2");
}
