// The documented defaults of RetryPolicy and Options, and how they fit together: no server.
#include <gtest/gtest.h>

#include <pg_ratelimit/limiter.hpp>
#include <pg_ratelimit/retry.hpp>

namespace pr = pg_ratelimit;
using std::chrono::microseconds;
using std::chrono::milliseconds;

TEST(Defaults, RetryPolicyIsSizedForAHotKey) {
    const pr::RetryPolicy policy;
    EXPECT_EQ(policy.max_attempts, 100);
    EXPECT_EQ(policy.max_elapsed, milliseconds{10000});
    EXPECT_EQ(policy.base_delay, microseconds{1000});
    EXPECT_EQ(policy.max_delay, microseconds{100000});
}

// Even at their ceilings, the back-off sleeps between the max_attempts attempts fit within max_elapsed
// (on average they take half as long), so while attempts are quick the attempt count is the bound that
// applies, and max_elapsed caps the calls whose attempts are themselves slow.
TEST(Defaults, AllAttemptsFitWithinMaxElapsed) {
    const pr::RetryPolicy policy;
    microseconds ceilings{0};
    for (int attempt = 1; attempt < policy.max_attempts; ++attempt) ceilings += pr::backoff_ceiling(policy, attempt);
    EXPECT_EQ(ceilings, microseconds{9'327'000});  // 1 + 2 + ... + 64 ms, then 92 x 100 ms
    EXPECT_LT(ceilings, policy.max_elapsed);
}

TEST(Defaults, OptionsRetryWithTheDefaultPolicyAndCachePoliciesFor30Seconds) {
    const pr::Options options;
    EXPECT_EQ(options.retry.max_attempts, pr::RetryPolicy{}.max_attempts);
    EXPECT_EQ(options.policy_ttl, milliseconds{30000});
    const pr::Options positional{2};  // aggregate initialization from the front still works
    EXPECT_EQ(positional.pool_size, 2u);
}
