// Limiter::wait: throttling within a time budget.
#include <gtest/gtest.h>

#include <algorithm>
#include <future>
#include <pg_ratelimit/client.hpp>
#include <vector>

#include "support.hpp"

namespace pr = pg_ratelimit;
using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

namespace {

class WaitTest : public test_support::ServerTest {
  protected:
    void SetUp() override {
        ServerTest::SetUp();
        key = test_support::unique_key("k");
        limiter = std::make_unique<pr::Limiter>(test_support::conninfo(), pr::Options{8});
    }
    std::string key;
    std::unique_ptr<pr::Limiter> limiter;
};

milliseconds since(Clock::time_point start) { return std::chrono::duration_cast<milliseconds>(Clock::now() - start); }

}  // namespace

TEST_F(WaitTest, SleepsUntilTheUnitIsDueThenConsumes) {
    const std::string limit = test_support::define_limit("wait", 10, "1 second", 1);  // one unit per 100 ms
    const Clock::time_point start = Clock::now();
    EXPECT_TRUE(limiter->wait(key, limit, milliseconds{1000}).allowed);  // available now
    const pr::Decision d = limiter->wait(key, limit, milliseconds{1000});
    EXPECT_TRUE(d.allowed);
    EXPECT_EQ(d.retry_after, std::chrono::microseconds{0});
    // The second unit is due 100 ms after the first was taken. (Upper bounds stay loose: other
    // suites may be loading the same server.)
    EXPECT_GE(since(start), milliseconds{90});
    EXPECT_LT(since(start), milliseconds{1000});
}

TEST_F(WaitTest, ReturnsTheDenialAtOnceWhenTheWaitWouldBeTooLong) {
    const std::string limit = test_support::define_limit("wait_long", 1, "1 minute", 1);
    (void)limiter->request(key, limit);
    const Clock::time_point start = Clock::now();
    const pr::Decision d = limiter->wait(key, limit, milliseconds{2000});
    EXPECT_FALSE(d.allowed);
    EXPECT_GT(d.retry_after, std::chrono::seconds{50});
    EXPECT_LT(since(start), milliseconds{1000});  // did not sleep out the budget
    // Nothing was consumed or reserved by the refusal.
    EXPECT_LE(limiter->check(key, limit).retry_after, std::chrono::seconds{60});
}

// Concurrent waiters queue up in order (each reserves its turn) instead of waking together.
TEST_F(WaitTest, ConcurrentWaitersAreSpacedByTheRate) {
    const std::string limit = test_support::define_limit("wait_many", 10, "1 second", 1);
    constexpr int waiters = 6;
    const Clock::time_point start = Clock::now();
    std::vector<std::future<milliseconds>> done;
    done.reserve(waiters);
    for (int i = 0; i < waiters; ++i)
        done.push_back(std::async(std::launch::async, [&] {
            EXPECT_TRUE(limiter->wait(key, limit, milliseconds{3000}).allowed);
            return since(start);
        }));
    std::vector<milliseconds> at;
    at.reserve(waiters);
    for (auto &f : done) at.push_back(f.get());
    std::sort(at.begin(), at.end());
    // 6 units at 10 per second from a full bucket of 1: the last one cannot run before ~500 ms; a
    // waiter that consumed more than its unit would push the others far later.
    EXPECT_GE(at.back(), milliseconds{450});
    EXPECT_LT(at.back(), milliseconds{1500});
}

// With max_reserved = 0 nothing can be taken ahead: wait() sleeps and tries again instead.
TEST_F(WaitTest, WithoutReservationsItSleepsAndRetries) {
    const std::string limit = test_support::define_limit("wait_noreserve", 10, "1 second", 1, 0);
    constexpr int waiters = 3;
    std::vector<std::future<bool>> done;
    done.reserve(waiters);
    for (int i = 0; i < waiters; ++i)
        done.push_back(
            std::async(std::launch::async, [&] { return limiter->wait(key, limit, milliseconds{3000}).allowed; }));
    for (auto &f : done) EXPECT_TRUE(f.get());
}
