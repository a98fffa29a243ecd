// Limiter::wait: throttling within a time budget.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <future>
#include <mutex>
#include <pg_ratelimit/client.hpp>
#include <pqxx/pqxx>
#include <string>
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

// The units are due after the deadline: a reservation could be admitted before it (so the first answer's
// retry_after fits the budget), but would not be due in time. wait() says so at once instead of coming back
// until the budget runs out.
TEST_F(WaitTest, ReturnsAtOnceWhenTheUnitsAreDueAfterTheDeadline) {
    const std::string limit = test_support::define_limit("wait_late", 1, "1 second", 1);
    EXPECT_TRUE(limiter->request(key, limit).allowed);  // the next unit is due in 1 s
    const Clock::time_point start = Clock::now();
    const pr::Decision d = limiter->wait(key, limit, milliseconds{700});
    EXPECT_FALSE(d.allowed);
    EXPECT_LT(since(start), milliseconds{250});
    // retry_after: when a wait() with the same budget would succeed (the unit due 700 ms after it).
    EXPECT_GT(d.retry_after, milliseconds{200});
    EXPECT_LE(d.retry_after, milliseconds{300});
}

// reserve_within: a reservation only if due within the bound; a denial takes nothing.
TEST_F(WaitTest, ReserveWithinTakesNothingWhenDenied) {
    const std::string limit = test_support::define_limit("reserve_within", 1, "1 minute", 1);
    EXPECT_TRUE(limiter->reserve_within(key, limit, milliseconds{0}).allowed);  // available now
    const pr::Decision denied = limiter->reserve_within(key, limit, std::chrono::seconds{2});
    EXPECT_FALSE(denied.allowed);
    EXPECT_GT(denied.retry_after, std::chrono::seconds{55});  // the unit is due in 60 s: 58 s from now
    EXPECT_LE(denied.retry_after, std::chrono::seconds{58});
    EXPECT_LE(limiter->check(key, limit).retry_after, std::chrono::seconds{60});  // nothing taken

    auto conn = test_support::connect();
    {
        pqxx::work tx{*conn};
        const pr::Decision in_tx = limiter->reserve_within(tx, key, limit, std::chrono::seconds{70});
        EXPECT_TRUE(in_tx.allowed);
        EXPECT_GT(in_tx.retry_after, std::chrono::seconds{55});
    }  // rolled back
    EXPECT_LE(limiter->check(key, limit).retry_after, std::chrono::seconds{60});

    const pr::Decision granted = limiter->reserve_within(key, limit, milliseconds::max());  // no bound
    EXPECT_TRUE(granted.allowed);
    EXPECT_GT(granted.retry_after, std::chrono::seconds{55});
    EXPECT_GT(limiter->check(key, limit).retry_after, std::chrono::seconds{100});  // in debt: 2 units owed
    EXPECT_THROW((void)limiter->reserve_within(key, limit, milliseconds{-1}), pr::InvalidArgument);
}

// An application role with nothing but the default grants (no EXECUTE on rate_limit_refund) waits under
// contention: more waiters than the budget admits, all at once. None gets "permission denied", exactly the
// units due within the budget are admitted, and the denied waiters leave nothing behind: the key's state
// accounts for the admitted units alone.
TEST_F(WaitTest, DefaultGrantsSufficeAndDeniedWaitersLeaveNothingBehind) {
    const std::string role = test_support::unique_key("client_app");
    test_support::exec("CREATE ROLE " + role + " LOGIN");
    // 1 unit per second, 2 at once: within 1.5 s, the 2 in the bucket and the one due after 1 s.
    const std::string limit = test_support::define_limit("wait_grants", 1, "1 second", 2);
    constexpr int waiters = 8;
    std::vector<std::string> errors;
    std::mutex errors_mutex;
    int admitted = 0;
    Clock::time_point start;
    {
        pr::Options options;
        options.pool_size = waiters;
        pr::Limiter app{test_support::conninfo() + " user=" + role, options};
        test_support::Barrier ready(waiters + 1);
        std::vector<std::future<bool>> done;
        done.reserve(waiters);
        for (int i = 0; i < waiters; ++i)
            done.push_back(std::async(std::launch::async, [&] {
                ready.arrive_and_wait();
                try {
                    return app.wait(key, limit, milliseconds{1500}).allowed;
                } catch (const std::exception &error) {
                    const std::lock_guard<std::mutex> guard(errors_mutex);
                    errors.emplace_back(error.what());
                    return false;
                }
            }));
        start = Clock::now();
        ready.arrive_and_wait();
        for (auto &f : done) admitted += f.get();
    }
    for (const std::string &error : errors) ADD_FAILURE() << "wait() threw: " << error;
    EXPECT_EQ(admitted, 3);
    // Units taken = what the key lacks now (reset_after at 1 unit per second) + what refilled since the
    // first call. A denied waiter's reservation left behind would add a whole unit.
    const pr::Decision state = limiter->check(key, limit);
    const double lacking = std::chrono::duration<double>(state.reset_after).count();
    const double refilled = std::chrono::duration<double>(Clock::now() - start).count();
    EXPECT_NEAR(lacking + refilled, admitted, 0.3);
    std::printf("[ stats    ] %d waiters: %d admitted, %.3f units taken by the key's state\n", waiters, admitted,
                lacking + refilled);
    test_support::exec("DROP ROLE " + role);
}

// A database whose extension predates rate_limit_reserve (0.1.0): the Limiter still opens and serves every
// other call (the statement is prepared on first use), and wait() says what to do.
TEST_F(WaitTest, OnAnOlderExtensionWaitSaysToUpdateIt) {
    const std::string database = test_support::create_database("wait_old", "0.1.0");
    {
        pr::Limiter old{test_support::conninfo_for_database(database)};
        EXPECT_TRUE(old.request(key, "default").allowed);
        try {
            (void)old.wait(key, "default", milliseconds{100});
            ADD_FAILURE() << "no ExtensionMissing";
        } catch (const pr::ExtensionMissing &error) {
            EXPECT_EQ(error.sqlstate(), "42883");
            EXPECT_NE(error.hint().find("ALTER EXTENSION pg_ratelimit UPDATE"), std::string::npos) << error.hint();
        }
        EXPECT_TRUE(old.check(key, "default").allowed);  // and the Limiter carries on
    }
    test_support::drop_database(database);
}
