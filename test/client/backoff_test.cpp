// The back-off bounds of RetryPolicy: pure arithmetic, no server.
#include <gtest/gtest.h>

#include <pg_ratelimit/retry.hpp>

using pg_ratelimit::backoff_ceiling;
using pg_ratelimit::RetryPolicy;
using std::chrono::microseconds;

TEST(Backoff, CeilingDoublesFromBaseUpToMax) {
    RetryPolicy policy;
    policy.base_delay = microseconds{1000};
    policy.max_delay = microseconds{10000};
    EXPECT_EQ(backoff_ceiling(policy, 1), microseconds{1000});
    EXPECT_EQ(backoff_ceiling(policy, 2), microseconds{2000});
    EXPECT_EQ(backoff_ceiling(policy, 3), microseconds{4000});
    EXPECT_EQ(backoff_ceiling(policy, 4), microseconds{8000});
    EXPECT_EQ(backoff_ceiling(policy, 5), microseconds{10000});
    EXPECT_EQ(backoff_ceiling(policy, 1000000), microseconds{10000});
}

TEST(Backoff, HugeMaxDoesNotOverflow) {
    RetryPolicy policy;
    policy.base_delay = microseconds{3};
    policy.max_delay = microseconds::max();
    for (int attempt = 1; attempt < 200; ++attempt) EXPECT_GT(backoff_ceiling(policy, attempt).count(), 0);
    EXPECT_EQ(backoff_ceiling(policy, 199), microseconds::max());
}

TEST(Backoff, ZeroDelaysMeanImmediateRetries) {
    RetryPolicy policy;
    policy.base_delay = microseconds{0};
    EXPECT_EQ(backoff_ceiling(policy, 5), microseconds{0});
    policy.base_delay = microseconds{1000};
    policy.max_delay = microseconds{0};
    EXPECT_EQ(backoff_ceiling(policy, 5), microseconds{0});
}
