// Limiter::acquire and Limiter::release (concurrency limits), against the test server: leases held by the
// caller's connections, released at commit, at rollback, by release() and when the connection closes; a
// session lease taken by a transaction that rolls back goes with it.
#include <gtest/gtest.h>

#include <pg_ratelimit/client.hpp>
#include <pqxx/pqxx>
#include <thread>

#include "pqxx_compat.hpp"
#include "support.hpp"

namespace compat = pg_ratelimit::compat;
namespace pr = pg_ratelimit;
using std::chrono::microseconds;

namespace {

class LeaseTest : public test_support::ServerTest {
  protected:
    void SetUp() override {
        ServerTest::SetUp();
        // Two slots per key; session leases count for at most 8 hours (bands of 1 hour).
        limit = test_support::define_limit("leases", 2, "8 hours", -1, 0, "concurrency");
        key = test_support::unique_key("export \"q\";\n{x}");
        limiter = std::make_unique<pr::Limiter>(test_support::conninfo());
    }

    std::string limit;
    std::string key;
    std::unique_ptr<pr::Limiter> limiter;
};

}  // namespace

TEST_F(LeaseTest, TwoHoldersThenDenialUntilCommit) {
    auto first = test_support::connect();
    auto second = test_support::connect();
    auto third = test_support::connect();
    pqxx::work a(*first);
    pqxx::work b(*second);
    pqxx::work c(*third);
    const pr::Lease one = limiter->acquire(a, key, limit);
    EXPECT_TRUE(one.acquired);
    EXPECT_EQ(one.free_slots, 1);
    EXPECT_EQ(one.scope, pr::LeaseScope::transaction);
    EXPECT_EQ(one.key, key);
    EXPECT_EQ(one.limit, limit);
    EXPECT_EQ(one.retry_after, microseconds(0));
    EXPECT_TRUE(limiter->acquire(b, key, limit));
    const pr::Lease denied = limiter->acquire(c, key, limit);
    EXPECT_FALSE(denied);
    EXPECT_EQ(denied.free_slots, 0);
    // Two transaction leases: the hint is one band, an eighth of the period.
    EXPECT_EQ(denied.retry_after, microseconds(int64_t{3600} * 1000000));
    EXPECT_EQ(denied.reset_after, microseconds(0));
    a.commit();
    const pr::Lease after_commit = limiter->acquire(c, key, limit);
    EXPECT_TRUE(after_commit);
    EXPECT_EQ(after_commit.free_slots, 0);
    b.abort();
    EXPECT_EQ(limiter->acquire(c, key, limit).free_slots, 0);  // b's slot came back at its rollback
    c.commit();
}

TEST_F(LeaseTest, SessionLeaseOutlivesItsTransactionUntilRelease) {
    auto holder = test_support::connect();
    {
        pqxx::work tx(*holder);
        const pr::Lease lease = limiter->acquire(tx, key, limit, pr::LeaseScope::session);
        EXPECT_TRUE(lease);
        EXPECT_EQ(lease.scope, pr::LeaseScope::session);
        // Counted for 8 to 9 hours.
        EXPECT_GT(lease.reset_after, microseconds(int64_t{8} * 3600 * 1000000));
        EXPECT_LE(lease.reset_after, microseconds(int64_t{9} * 3600 * 1000000));
        tx.commit();
    }
    auto other = test_support::connect();
    {
        pqxx::work tx(*other);
        EXPECT_EQ(limiter->acquire(tx, key, limit).free_slots, 0);
        EXPECT_FALSE(limiter->release(tx, key, limit));  // not this connection's lease
        tx.commit();
    }
    {
        pqxx::work tx(*holder);
        EXPECT_TRUE(limiter->release(tx, key, limit));
        EXPECT_FALSE(limiter->release(tx, key, limit));
        tx.commit();
    }
    pqxx::work tx(*other);
    EXPECT_EQ(limiter->acquire(tx, key, limit).free_slots, 1);
    tx.commit();
}

// A session lease taken by a transaction that rolls back goes with it: an aborted transaction's is given
// back, and run_transaction's retry of a 40001 holds one lease in the end, not one per attempt.
TEST_F(LeaseTest, SessionLeaseGoesWithItsRolledBackTransaction) {
    auto holder = test_support::connect();
    {
        pqxx::work tx(*holder);
        EXPECT_TRUE(limiter->acquire(tx, key, limit, pr::LeaseScope::session));
        tx.abort();
    }
    const std::string rate_limit = test_support::define_limit("leases_rate", 10, "1 hour");
    (void)limiter->request("hot", rate_limit);  // "hot" has a row: the conflict below is an UPDATE
    int calls = 0;
    const pr::Lease lease = pr::run_transaction(*holder, pr::isolation::serializable, [&](pqxx::work &tx) {
        ++calls;
        pr::Lease taken = limiter->acquire(tx, key, limit, pr::LeaseScope::session);  // takes the snapshot
        if (calls == 1) {
            auto other = test_support::connect();
            pqxx::work elsewhere{*other};
            compat::exec_params(elsewhere, "SELECT rate_limit_request($1, $2)", "hot", rate_limit);
            elsewhere.commit();
        }
        (void)limiter->request(tx, "hot", rate_limit);  // 40001 in the first attempt
        return taken;
    });
    EXPECT_EQ(calls, 2);
    EXPECT_TRUE(lease);
    EXPECT_EQ(lease.free_slots, 1);  // the first attempt's lease went with its rollback
    pqxx::work tx(*holder);
    EXPECT_EQ(compat::exec1(tx, "SELECT count(*) FROM pg_locks WHERE objsubid = 21070 AND pid = pg_backend_pid()")[0]
                  .as<int>(),
              1);
    EXPECT_TRUE(limiter->release(tx, key, limit));
    tx.commit();
}

TEST_F(LeaseTest, SessionLeaseGoesWithItsConnection) {
    auto holder = test_support::connect();
    {
        pqxx::work tx(*holder);
        EXPECT_TRUE(limiter->acquire(tx, key, limit, pr::LeaseScope::session));
        EXPECT_TRUE(limiter->acquire(tx, key, limit, pr::LeaseScope::session));
        tx.commit();
    }
    auto other = test_support::connect();
    {
        pqxx::work tx(*other);
        EXPECT_FALSE(limiter->acquire(tx, key, limit));
        tx.commit();
    }
    holder.reset();  // the connection closes: the server ends the session (asynchronously)
    bool freed = false;
    for (int attempt = 0; attempt < 100 && !freed; ++attempt) {
        pqxx::work tx(*other);
        freed = limiter->acquire(tx, key, limit).free_slots == 1;
        tx.commit();
        if (!freed) std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    EXPECT_TRUE(freed);
}

TEST_F(LeaseTest, WrongKindAndBadInputAreTyped) {
    auto connection = test_support::connect();
    const std::string rate_limit = test_support::define_limit("not_leases", 5, "1 minute");
    {
        pqxx::work tx(*connection);
        EXPECT_THROW((void)limiter->acquire(tx, key, rate_limit), pr::WrongLimitKind);
    }
    EXPECT_THROW((void)limiter->request(key, limit), pr::WrongLimitKind);
    {
        pqxx::work tx(*connection);
        EXPECT_THROW((void)limiter->acquire(tx, key, "no such limit"), pr::UnknownLimit);
    }
    {
        pqxx::work tx(*connection);
        EXPECT_THROW((void)limiter->acquire(tx, std::string("a\0b", 3), limit), pr::InvalidArgument);
        EXPECT_THROW((void)limiter->acquire(tx, std::string(1025, 'k'), limit), pr::InvalidArgument);
    }
    {
        pqxx::work tx(*connection);
        // release needs no definition: an unknown limit holds no lease of this connection.
        EXPECT_FALSE(limiter->release(tx, key, "no such limit"));
        tx.commit();
    }
}

TEST_F(LeaseTest, ShadowLimitLetsThroughWithoutASlotAndSaysSo) {
    test_support::exec("SELECT rate_limit_define('" + limit +
                       "', 2, '8 hours', algorithm => 'concurrency', shadow => true)");
    auto connection = test_support::connect();
    pqxx::work tx(*connection);
    const pr::Lease first = limiter->acquire(tx, key, limit);
    const pr::Lease second = limiter->acquire(tx, key, limit);
    EXPECT_TRUE(first.acquired && !first.shadow_denied);
    EXPECT_TRUE(second.acquired && !second.shadow_denied);
    const pr::Lease third = limiter->acquire(tx, key, limit);
    EXPECT_TRUE(third.acquired);       // a shadow limit never denies ...
    EXPECT_TRUE(third.shadow_denied);  // ... but says that a real one would have, and that no slot is held
    EXPECT_EQ(third.free_slots, 0);
    tx.commit();
}

TEST_F(LeaseTest, PeriodChangeIsRefused) {
    // Session leases carry time bands of the period they were taken under: 55000, and nothing changes.
    std::string sqlstate;
    try {
        test_support::exec("SELECT rate_limit_define('" + limit + "', 2, '9 hours', algorithm => 'concurrency')");
    } catch (const pqxx::sql_error &e) {
        sqlstate = e.sqlstate();
    }
    EXPECT_EQ(sqlstate, "55000");
    // Another spelling of the same period is no change; N may change.
    test_support::exec("SELECT rate_limit_define('" + limit + "', 3, '480 minutes', algorithm => 'concurrency')");
    auto connection = test_support::connect();
    pqxx::work tx(*connection);
    EXPECT_EQ(limiter->acquire(tx, key, limit).free_slots, 2);
}
