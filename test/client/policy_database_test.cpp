// The policy cache per database: one Limiter serving a database per tenant, each with a limit of the same
// name and its own numbers. Every decision must carry the policy of the database it was made in.
#include <gtest/gtest.h>

#include <pg_ratelimit/client.hpp>
#include <pqxx/pqxx>
#include <string>

#include "support.hpp"

namespace pr = pg_ratelimit;
using std::chrono::seconds;

namespace {

class PolicyDatabaseTest : public test_support::ServerTest {
  protected:
    void SetUp() override {
        ServerTest::SetUp();
        tenant_a = test_support::create_database("tenant_a");
        tenant_b = test_support::create_database("tenant_b");
        define(tenant_a, "SELECT rate_limit_define('api', 10, '1 minute')");
        define(tenant_b, "SELECT rate_limit_define('api', 20, '1 hour', capacity => 40)");
    }
    void TearDown() override {
        test_support::drop_database(tenant_a);
        test_support::drop_database(tenant_b);
    }

    static void define(const std::string &database, const std::string &sql) {
        pqxx::connection conn{test_support::conninfo_for_database(database)};
        pqxx::work tx{conn};
        tx.exec(sql);
        tx.commit();
    }

    std::string tenant_a;
    std::string tenant_b;
};

void expect_policy(const pr::Decision &d, double rate, seconds period, double capacity) {
    ASSERT_TRUE(d.policy.has_value());
    EXPECT_EQ(d.policy->rate, rate);
    EXPECT_EQ(std::chrono::duration_cast<seconds>(d.policy->period).count(), period.count());
    EXPECT_EQ(d.policy->capacity, capacity);
}

}  // namespace

TEST_F(PolicyDatabaseTest, InTransactionCallsCarryTheirOwnDatabasesPolicy) {
    pr::Limiter limiter{test_support::conninfo()};  // its pool is on yet another database, without 'api'
    pqxx::connection a{test_support::conninfo_for_database(tenant_a)};
    pqxx::connection b{test_support::conninfo_for_database(tenant_b)};
    for (int round = 0; round < 2; ++round) {  // the second round is served from the cache
        SCOPED_TRACE(round);
        {
            pqxx::work tx{a};
            expect_policy(limiter.request(tx, "k", "api"), 10, seconds{60}, 10);
            tx.commit();
        }
        {
            pqxx::work tx{b};
            const pr::Decision d = limiter.request(tx, "k", "api");
            expect_policy(d, 20, seconds{3600}, 40);
            // RateLimit-Policy as the tenant's clients must see it.
            EXPECT_EQ(pr::ratelimit_policy_field(d), "\"api\";q=40;w=3600");
            expect_policy(limiter.request_many(tx, {"k", "j"}, "api")[1], 20, seconds{3600}, 40);
            expect_policy(limiter.request_all(tx, {{"k", "api", 1}}).decisions[0], 20, seconds{3600}, 40);
            expect_policy(limiter.check(tx, "k", "api"), 20, seconds{3600}, 40);
            tx.commit();
        }
    }
}

// The pooled calls of Limiters on each database, with the in-transaction calls of a third one mixed in.
TEST_F(PolicyDatabaseTest, PooledCallsCarryTheirOwnDatabasesPolicy) {
    pr::Limiter on_a{test_support::conninfo_for_database(tenant_a)};
    pr::Limiter on_b{test_support::conninfo_for_database(tenant_b)};
    expect_policy(on_a.request("k", "api"), 10, seconds{60}, 10);
    expect_policy(on_b.request("k", "api"), 20, seconds{3600}, 40);
    pqxx::connection b{test_support::conninfo_for_database(tenant_b)};
    pqxx::work tx{b};
    expect_policy(on_a.request(tx, "k", "api"), 20, seconds{3600}, 40);  // on_a's cache, b's database
    tx.commit();
    expect_policy(on_a.request("k", "api"), 10, seconds{60}, 10);
}
