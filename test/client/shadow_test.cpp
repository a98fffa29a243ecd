// Shadow mode from the client: a shadow limit never denies; Decision::shadow_denied says when it would
// have, through request, request_many, enforce and check, and the flagged calls consume nothing.
#include <gtest/gtest.h>

#include <pg_ratelimit/client.hpp>

#include "support.hpp"

namespace pr = pg_ratelimit;

namespace {

class ShadowTest : public test_support::ServerTest {
  protected:
    void SetUp() override {
        ServerTest::SetUp();
        limit = test_support::define_limit("shadow", 2, "1 hour");
        test_support::exec("SELECT rate_limit_define('" + limit + "', 2, '1 hour', shadow => true)");
        key = test_support::unique_key("shadow");
        limiter = std::make_unique<pr::Limiter>(test_support::conninfo());
    }

    std::string limit;
    std::string key;
    std::unique_ptr<pr::Limiter> limiter;
};

}  // namespace

TEST_F(ShadowTest, WouldBeDenialsAreAllowedAndFlagged) {
    const pr::Decision first = limiter->request(key, limit, 2);
    EXPECT_TRUE(first.allowed);
    EXPECT_FALSE(first.shadow_denied);
    EXPECT_EQ(first.remaining, 0);

    const pr::Decision over = limiter->request(key, limit);
    EXPECT_TRUE(over.allowed);
    EXPECT_TRUE(over.shadow_denied);
    EXPECT_EQ(over.retry_after.count(), 0);
    // An allowed decision: no Retry-After field for the HTTP response.
    for (const pr::HttpField &field : over.headers()) EXPECT_NE(field.name, "Retry-After");

    const std::vector<pr::Decision> many = limiter->request_many({key, test_support::unique_key("other")}, limit);
    ASSERT_EQ(many.size(), 2U);
    EXPECT_TRUE(many[0].allowed && many[0].shadow_denied);
    EXPECT_TRUE(many[1].allowed && !many[1].shadow_denied);

    EXPECT_NO_THROW(limiter->enforce(key, limit));
    const pr::Decision check = limiter->check(key, limit);
    EXPECT_TRUE(check.allowed && check.shadow_denied);
}

TEST_F(ShadowTest, TurningShadowOffDeniesFromTheSameState) {
    ASSERT_FALSE(limiter->request(key, limit, 2).shadow_denied);
    ASSERT_TRUE(limiter->request(key, limit, 2).shadow_denied);  // consumed nothing
    test_support::exec("SELECT rate_limit_define('" + limit + "', 2, '1 hour')");
    const pr::Decision denied = limiter->request(key, limit);
    EXPECT_FALSE(denied.allowed);
    EXPECT_FALSE(denied.shadow_denied);
    // One unit back in 30 minutes, not more: the flagged calls took nothing.
    EXPECT_GT(denied.retry_after, std::chrono::minutes{29});
    EXPECT_LE(denied.retry_after, std::chrono::minutes{30});
}

// A shadow-denied reservation took nothing: cancelling it must not give units back (that would mint
// them), and settling it records nothing.
TEST_F(ShadowTest, ShadowDeniedReservationsHoldNothing) {
    test_support::exec("GRANT EXECUTE ON FUNCTION rate_limit_settle(text, text, float8, float8) TO CURRENT_USER");
    pr::Reservation taken = limiter->reserve(key, limit, 2);
    ASSERT_TRUE(taken.ok());
    ASSERT_FALSE(taken.holds_nothing());
    pr::Reservation shadowed = limiter->reserve(key, limit, 2);
    ASSERT_TRUE(shadowed.ok());
    ASSERT_TRUE(shadowed.holds_nothing());
    EXPECT_FALSE(shadowed.cancel());
    const pr::Decision empty = limiter->check(key, limit);  // nothing came back
    EXPECT_EQ(empty.remaining, 0);
    EXPECT_TRUE(empty.shadow_denied);

    pr::Reservation again = limiter->reserve(key, limit, 1);
    ASSERT_TRUE(again.holds_nothing());
    EXPECT_THROW((void)again.settle(-1), pr::InvalidArgument);
    const pr::Decision settled = again.settle(5);
    EXPECT_TRUE(settled.allowed);
    EXPECT_TRUE(again.settled());
    // The work's 5 units were not recorded: the key is just empty, one unit back in 30 minutes.
    const pr::Decision after = limiter->check(key, limit);
    EXPECT_TRUE(after.shadow_denied);
    test_support::exec("SELECT rate_limit_define('" + limit + "', 2, '1 hour')");
    const pr::Decision real = limiter->request(key, limit);
    EXPECT_FALSE(real.allowed);
    EXPECT_LE(real.retry_after, std::chrono::minutes{30});
}
