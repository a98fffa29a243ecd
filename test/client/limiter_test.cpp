// The pooled and in-transaction calls against a real server: decisions, policies, errors.
#include <gtest/gtest.h>

#include <pg_ratelimit/client.hpp>
#include <pqxx/pqxx>

#include "support.hpp"

namespace pr = pg_ratelimit;
using std::chrono::microseconds;
using std::chrono::seconds;

namespace {

class LimiterTest : public test_support::ServerTest {
  protected:
    void SetUp() override {
        ServerTest::SetUp();
        limit = test_support::define_limit("limiter", 3, "1 minute", 3);
        key = test_support::unique_key("k");
        limiter = std::make_unique<pr::Limiter>(test_support::conninfo(), pr::Options{2});
    }
    std::string limit;
    std::string key;
    std::unique_ptr<pr::Limiter> limiter;
};

}  // namespace

TEST_F(LimiterTest, RequestConsumesUntilDenied) {
    for (int expected_remaining = 2; expected_remaining >= 0; --expected_remaining) {
        const pr::Decision d = limiter->request(key, limit);
        EXPECT_TRUE(d.allowed);
        EXPECT_EQ(d.remaining, expected_remaining);
        EXPECT_EQ(d.retry_after, microseconds{0});
    }
    const pr::Decision denied = limiter->request(key, limit);
    EXPECT_FALSE(denied.allowed);
    EXPECT_EQ(denied.remaining, 0);
    // One unit every 20 s; a little of it has already passed.
    EXPECT_GT(denied.retry_after, seconds{19});
    EXPECT_LE(denied.retry_after, seconds{20});
    EXPECT_GT(denied.reset_after, seconds{59});
    EXPECT_LE(denied.reset_after, seconds{60});
    EXPECT_EQ(denied.limit, limit);
    ASSERT_TRUE(denied.policy.has_value());
    EXPECT_EQ(denied.policy->rate, 3);
    EXPECT_EQ(denied.policy->capacity, 3);
    EXPECT_EQ(denied.policy->period, seconds{60});

    const auto headers = denied.headers();
    ASSERT_EQ(headers.size(), 3u);
    EXPECT_EQ(headers[0].value, "\"" + limit + "\";q=3;w=60");
    EXPECT_EQ(headers[1].value, "\"" + limit + "\";r=0;t=60");
    EXPECT_EQ(headers[2], (pr::HttpField{"Retry-After", "20"}));
}

TEST_F(LimiterTest, CostAndDefaultLimit) {
    const pr::Decision d = limiter->request(key, limit, 2.5);
    EXPECT_TRUE(d.allowed);
    EXPECT_EQ(d.remaining, 0);  // 0.5 left: whole units only
    const pr::Decision on_default = limiter->request(key);
    EXPECT_TRUE(on_default.allowed);
    EXPECT_EQ(on_default.limit, "default");
}

TEST_F(LimiterTest, CheckConsumesNothing) {
    (void)limiter->request(key, limit);
    for (int i = 0; i < 5; ++i) {
        const pr::Decision d = limiter->check(key, limit);
        EXPECT_TRUE(d.allowed);
        EXPECT_EQ(d.remaining, 1);  // what a request would leave
    }
    EXPECT_FALSE(limiter->check(key, limit, 3).allowed);
}

TEST_F(LimiterTest, RefundAndReset) {
    (void)limiter->request(key, limit, 3);
    EXPECT_FALSE(limiter->check(key, limit).allowed);
    const pr::Decision refunded = limiter->refund(key, limit, 2);
    EXPECT_TRUE(refunded.allowed);
    EXPECT_EQ(refunded.remaining, 2);
    limiter->reset(key, limit);
    EXPECT_EQ(limiter->request(key, limit).remaining, 2);
    // Never above capacity.
    EXPECT_EQ(limiter->refund(key, limit, 3).remaining, 3);
}

TEST_F(LimiterTest, InTransactionCallsCommitAndRollBackWithTheCaller) {
    auto conn = test_support::connect();
    {
        pqxx::work tx{*conn};
        EXPECT_TRUE(limiter->request(tx, key, limit, 2).allowed);
        EXPECT_EQ(limiter->check(tx, key, limit).remaining, 0);
        tx.abort();
    }
    EXPECT_EQ(limiter->check(key, limit).remaining, 2);  // rolled back: nothing consumed
    {
        pqxx::work tx{*conn};
        (void)limiter->request(tx, key, limit, 2);
        (void)limiter->refund(tx, key, limit, 1);
        tx.commit();
    }
    EXPECT_EQ(limiter->check(key, limit).remaining, 1);
    {
        pqxx::work tx{*conn};
        limiter->reset(tx, key, limit);
        tx.commit();
    }
    EXPECT_EQ(limiter->check(key, limit).remaining, 2);
}

TEST_F(LimiterTest, BadInputRaisesTypedErrorsWithTheServersSqlstate) {
    try {
        (void)limiter->request(key, limit, 0);
        ADD_FAILURE() << "no exception";
    } catch (const pr::InvalidArgument &error) {
        EXPECT_EQ(error.sqlstate(), "22023");
        // message() is the primary line of the server's text; what() has all of it.
        EXPECT_EQ(std::string(error.what()).rfind("ERROR:  " + error.message() + "\n", 0), 0u) << error.what();
        EXPECT_EQ(error.message().find('\n'), std::string::npos);
    }
    try {
        (void)limiter->request(key, limit, 4);  // above capacity
        ADD_FAILURE() << "no exception";
    } catch (const pr::InvalidArgument &error) {
        EXPECT_EQ(error.sqlstate(), "22023");
    }
    try {
        (void)limiter->check(key, "client_no_such_limit");
        ADD_FAILURE() << "no exception";
    } catch (const pr::UnknownLimit &error) {
        EXPECT_EQ(error.sqlstate(), "42704");
        EXPECT_NE(error.message().find("client_no_such_limit"), std::string::npos) << error.message();
    }
    try {
        (void)limiter->request(std::string(1025, 'x'), limit);
        ADD_FAILURE() << "no exception";
    } catch (const pr::InvalidArgument &error) {
        EXPECT_EQ(error.sqlstate(), "22001");
    }
    // A NUL would silently truncate the key in libpq: refused before anything is sent.
    EXPECT_THROW((void)limiter->request(std::string("ab\0cd", 5), limit), pr::InvalidArgument);
    // The typed errors are pqxx::sql_errors too; reset/refund report the same way.
    EXPECT_THROW(limiter->reset(key, "client_no_such_limit"), pqxx::sql_error);
    EXPECT_THROW((void)limiter->refund(key, limit, -1), pr::InvalidArgument);
    EXPECT_EQ(limiter->stats().retries, 0u);  // bad input is never retried
}

// A Limiter whose conninfo asks for LATIN1 still sends its keys as UTF-8: the key a SQL caller names with
// the same characters (here "\u00e9"), not the two LATIN1 characters its bytes would be converted from.
TEST_F(LimiterTest, KeysAreUtf8WhateverTheConninfosClientEncoding) {
    pr::Limiter latin1{test_support::conninfo() + " client_encoding=LATIN1", pr::Options{1}};
    const std::string accented = key + "-\xc3\xa9";
    test_support::exec("SELECT rate_limit_request('" + accented + "', '" + limit + "', 3)");
    EXPECT_FALSE(latin1.check(accented, limit).allowed);
    EXPECT_EQ(test_support::units_left(latin1, accented, limit), 0);
}

// An in-transaction call uses the caller's connection as it is: on a LATIN1 one a key that is not ASCII would
// name another key than the pooled calls', so it is refused (22021) before anything is sent; ASCII keys are
// the same bytes in every encoding.
TEST_F(LimiterTest, InTransactionKeyThatIsNotAsciiNeedsAUtf8Connection) {
    pqxx::connection latin1{test_support::conninfo() + " client_encoding=LATIN1"};
    const std::string accented = key + "-\xc3\xa9";
    {
        pqxx::work tx{latin1};
        try {
            (void)limiter->request(tx, accented, limit);
            ADD_FAILURE() << "no exception";
        } catch (const pr::InvalidArgument &error) {
            EXPECT_EQ(error.sqlstate(), "22021");
            EXPECT_NE(error.message().find("client_encoding is LATIN1"), std::string::npos) << error.message();
        }
        // A limit name is refused the same way (LATIN1 would name another limit, or none).
        try {
            (void)limiter->request(tx, key, limit + "-\xc3\xa9");
            ADD_FAILURE() << "no exception";
        } catch (const pr::InvalidArgument &error) {
            EXPECT_EQ(error.sqlstate(), "22021");
            EXPECT_NE(error.message().find("limit name that is not ASCII"), std::string::npos) << error.message();
        }
        EXPECT_TRUE(limiter->request(tx, key, limit).allowed);  // nothing was sent: the transaction goes on
        tx.commit();
    }
    EXPECT_EQ(test_support::units_left(*limiter, accented, limit), 3);
    EXPECT_EQ(test_support::units_left(*limiter, key, limit), 2);
}

TEST_F(LimiterTest, InTransactionBadInputIsTypedToo) {
    auto conn = test_support::connect();
    pqxx::work tx{*conn};
    EXPECT_THROW((void)limiter->request(tx, key, "client_no_such_limit"), pr::UnknownLimit);
}

TEST_F(LimiterTest, ExplicitSchemaIsUsed) {
    pr::Options options;
    options.schema = "public";
    pr::Limiter qualified{test_support::conninfo(), options};
    EXPECT_TRUE(qualified.request(key, limit).allowed);
    options.schema = "client_no_such_schema";
    EXPECT_THROW(pr::Limiter(test_support::conninfo(), options), pqxx::sql_error);
}

TEST(LimiterConstruction, UnreachableServerFailsAtConstruction) {
    EXPECT_THROW(pr::Limiter("host=/nonexistent/socket/dir port=1 connect_timeout=2"), pqxx::broken_connection);
}
