// Limiter::enforce (RateLimitExceeded on denial) and Reservation::settle, against the test server.
#include <gtest/gtest.h>

#include <pg_ratelimit/client.hpp>
#include <pqxx/pqxx>

#include "support.hpp"

namespace pr = pg_ratelimit;
using std::chrono::microseconds;
using std::chrono::seconds;

namespace {

class EnforceSettleTest : public test_support::ServerTest {
  protected:
    void SetUp() override {
        ServerTest::SetUp();
        // 3 units per hour: one every 20 minutes; reservations up to 10 in debt.
        limit = test_support::define_limit("enforce", 3, "1 hour", 3, 10);
        key = test_support::unique_key("user \"q\";\n{x}");
        limiter = std::make_unique<pr::Limiter>(test_support::conninfo());
        // rate_limit_settle is not granted to PUBLIC; the test role may not own the extension.
        test_support::exec("GRANT EXECUTE ON FUNCTION rate_limit_settle(text, text, float8, float8) TO CURRENT_USER");
    }
    std::int64_t remaining() { return test_support::units_left(*limiter, key, limit); }

    std::string limit;
    std::string key;
    std::unique_ptr<pr::Limiter> limiter;
};

}  // namespace

TEST_F(EnforceSettleTest, EnforceConsumesThenThrowsTyped) {
    limiter->enforce(key, limit);
    limiter->enforce(key, limit, 2);
    EXPECT_EQ(remaining(), 0);
    try {
        limiter->enforce(key, limit);
        FAIL() << "expected RateLimitExceeded";
    } catch (const pr::RateLimitExceeded &e) {
        EXPECT_EQ(e.sqlstate(), "RL001");
        EXPECT_EQ(e.limit(), limit);
        EXPECT_EQ(e.key(), key);  // whole, with its quote, semicolon, newline and braces
        // One unit refills in 20 minutes, minus the little time since the calls.
        EXPECT_GT(e.retry_after(), seconds{20 * 60 - 30});
        EXPECT_LE(e.retry_after(), seconds{20 * 60});
    }
    EXPECT_EQ(remaining(), 0);  // the denial consumed nothing
}

// The longest retry_after the server reports (MAX_DURATION, 3162240000000 s: a lifetime quota of one unit
// at the least rate over the longest period) arrives whole: 13 digits, with the limit and the key.
TEST_F(EnforceSettleTest, EnforceReportsTheLongestRetryAfter) {
    const std::string lifetime = test_support::define_limit("lifetime", 1e-9, "36600 days", 1);
    limiter->enforce(key, lifetime);
    try {
        limiter->enforce(key, lifetime);
        FAIL() << "expected RateLimitExceeded";
    } catch (const pr::RateLimitExceeded &e) {
        EXPECT_EQ(e.retry_after().count(), 3162240000000000000);  // microseconds
        EXPECT_EQ(e.limit(), lifetime);
        EXPECT_EQ(e.key(), key);
    }
}

TEST_F(EnforceSettleTest, EnforceDenialRollsBackTheTransaction) {
    auto conn = test_support::connect();
    {
        pqxx::work tx{*conn};
        limiter->enforce(tx, key, limit, 2);
        EXPECT_THROW(limiter->enforce(tx, key, limit, 2), pr::RateLimitExceeded);
        // tx is aborted: it cannot commit, and its first consumption is undone.
    }
    EXPECT_EQ(remaining(), 3);
}

TEST_F(EnforceSettleTest, EnforceBadInputStaysInvalidArgument) {
    EXPECT_THROW(limiter->enforce(key, limit, 4), pr::InvalidArgument);  // above capacity
    EXPECT_THROW(limiter->enforce(key, "no_such_limit_enforce"), pr::UnknownLimit);
}

TEST_F(EnforceSettleTest, SettleGivesBackOrTakesIntoDebt) {
    pr::Reservation r = limiter->reserve(key, limit, 3);
    ASSERT_TRUE(r.ok());
    const pr::Decision less = r.settle(1);  // 2 come back
    EXPECT_TRUE(r.settled());
    EXPECT_TRUE(less.allowed);
    EXPECT_EQ(less.remaining, 2);
    EXPECT_EQ(remaining(), 2);
    EXPECT_FALSE(r.cancel());                           // settled: nothing to cancel
    EXPECT_THROW((void)r.settle(1), std::logic_error);  // nor to settle again

    pr::Reservation more = limiter->reserve(key, limit, 2);
    ASSERT_TRUE(more.ok());
    const pr::Decision debt = more.settle(20);  // 18 more than the 0 left: 18 in debt, beyond max_reserved 10
    EXPECT_TRUE(debt.allowed);
    EXPECT_EQ(debt.remaining, 0);
    EXPECT_GT(debt.retry_after, seconds{18 * 20 * 60 - 30});
    EXPECT_LE(debt.retry_after, seconds{18 * 20 * 60});
}

TEST_F(EnforceSettleTest, SettleInsideTheTransaction) {
    auto conn = test_support::connect();
    {
        pqxx::work tx{*conn};
        pr::Reservation r = limiter->reserve(tx, key, limit, 3);
        EXPECT_THROW((void)r.settle(0), std::logic_error);  // made in tx: settle(tx, ...) only
        const pr::Decision d = r.settle(tx, 0);
        EXPECT_EQ(d.remaining, 3);
        tx.commit();
    }
    EXPECT_EQ(remaining(), 3);
    pr::Reservation r = limiter->reserve(key, limit, 1);
    EXPECT_THROW((void)r.settle(-1), pr::InvalidArgument);
    EXPECT_FALSE(r.settled());  // a refused settle leaves it open
    EXPECT_EQ(r.settle(1).remaining, 2);
}
