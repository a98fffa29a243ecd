// Limiter::request_all against a real server: all or nothing on every storage mode (with shards and a
// per-key override), the overall decision, policies, bad input consuming nothing, the caller's transaction,
// and concurrent callers naming the limits in opposite orders (no deadlock, exact admission) at READ
// COMMITTED and SERIALIZABLE.
#include <gtest/gtest.h>

#include <atomic>
#include <pg_ratelimit/client.hpp>
#include <pqxx/pqxx>
#include <stdexcept>
#include <thread>
#include <vector>

#include "all_rows.hpp"
#include "support.hpp"

namespace pr = pg_ratelimit;

namespace {

class RequestAllTest : public test_support::ServerTest {
  protected:
    void SetUp() override {
        ServerTest::SetUp();
        limiter = std::make_unique<pr::Limiter>(test_support::conninfo(), pr::Options{2});
    }
    std::int64_t left(const std::string &key, const std::string &limit) {
        return test_support::units_left(*limiter, key, limit);
    }
    std::unique_ptr<pr::Limiter> limiter;
};

TEST_F(RequestAllTest, AllowedConsumesFromEveryLimit) {
    const std::string per_minute = test_support::define_limit("all_min", 3, "1 minute");
    const std::string per_day = test_support::define_limit("all_day", 10, "1 day", -1, -1, "fixed_window");
    const std::string user = test_support::unique_key("user");
    const pr::AllDecision all = limiter->request_all({{user, per_minute, 1}, {user, per_day, 4}});
    ASSERT_TRUE(all.allowed());
    ASSERT_EQ(all.decisions.size(), 2U);
    EXPECT_TRUE(all.decisions[0].allowed);
    EXPECT_EQ(all.decisions[0].remaining, 2);
    EXPECT_EQ(all.decisions[0].limit, per_minute);
    EXPECT_EQ(all.decisions[1].remaining, 6);
    EXPECT_EQ(all.decisions[1].limit, per_day);
    // The overall decision: the smallest remaining, the largest reset_after, no limit and no policy.
    EXPECT_EQ(all.overall.remaining, 2);
    EXPECT_EQ(all.overall.reset_after, std::max(all.decisions[0].reset_after, all.decisions[1].reset_after));
    EXPECT_EQ(all.overall.retry_after.count(), 0);
    EXPECT_TRUE(all.overall.limit.empty());
    EXPECT_FALSE(all.overall.policy.has_value());
    // Each request's decision carries its limit's policy, as request()'s does.
    ASSERT_TRUE(all.decisions[0].policy.has_value());
    EXPECT_EQ(all.decisions[0].policy->capacity, 3);
    ASSERT_TRUE(all.decisions[1].policy.has_value());
    EXPECT_EQ(all.decisions[1].policy->algorithm, "fixed_window");
    EXPECT_EQ(left(user, per_minute), 2);
    EXPECT_EQ(left(user, per_day), 6);
}

// One denial consumes nothing anywhere, on every storage mode, with a sharded limit and a key's override;
// the others report what they would have decided.
class RequestAllStorageTest : public RequestAllTest, public ::testing::WithParamInterface<const char *> {};

TEST_P(RequestAllStorageTest, OneDenialConsumesNothingAnywhere) {
    const std::string storage = GetParam();
    const std::string plain = test_support::define_limit("all_plain", 5, "1 hour", -1, -1, "token_bucket", storage);
    const std::string sharded = test_support::define_limit("all_shards", 8, "1 hour", -1, -1, "token_bucket", storage);
    const std::string scarce = test_support::define_limit("all_scarce", 2, "1 hour", -1, -1, "token_bucket", storage);
    const std::string vip = test_support::unique_key("vip");
    test_support::exec("SELECT rate_limit_define('" + sharded + "', 8, '1 hour', shards => 4, storage => '" + storage +
                       "')");
    test_support::exec("SELECT rate_limit_override('" + vip + "', '" + plain + "', 50)");
    // scarce has 1 unit left for vip; everything else is full.
    ASSERT_TRUE(limiter->request(vip, scarce).allowed);
    const std::int64_t plain_before = left(vip, plain);
    const std::int64_t sharded_before = left(vip, sharded);
    ASSERT_EQ(plain_before, 50);  // the override
    ASSERT_EQ(sharded_before, 8);

    // Denied by the last request (2 > 1 left): the first two, which would have been allowed (30 fits only
    // under the override), take nothing.
    const pr::AllDecision denied = limiter->request_all({{vip, plain, 30}, {vip, sharded, 2}, {vip, scarce, 2}});
    EXPECT_FALSE(denied.allowed());
    ASSERT_EQ(denied.decisions.size(), 3U);
    EXPECT_TRUE(denied.decisions[0].allowed);
    EXPECT_EQ(denied.decisions[0].remaining, 20);
    EXPECT_TRUE(denied.decisions[1].allowed);
    EXPECT_FALSE(denied.decisions[2].allowed);
    EXPECT_GT(denied.decisions[2].retry_after.count(), 0);
    EXPECT_EQ(denied.overall.retry_after, denied.decisions[2].retry_after);
    EXPECT_EQ(left(vip, plain), plain_before);
    EXPECT_EQ(left(vip, sharded), sharded_before);
    EXPECT_EQ(left(vip, scarce), 1);

    // Denied by the first (in every order the server may decide them in): still nothing taken.
    const pr::AllDecision first_denied = limiter->request_all({{vip, scarce, 2}, {vip, sharded, 2}, {vip, plain, 30}});
    EXPECT_FALSE(first_denied.allowed());
    EXPECT_EQ(left(vip, plain), plain_before);
    EXPECT_EQ(left(vip, sharded), sharded_before);

    // Within what is left, all three are taken.
    const pr::AllDecision allowed = limiter->request_all({{vip, plain, 30}, {vip, sharded, 2}, {vip, scarce, 1}});
    EXPECT_TRUE(allowed.allowed());
    EXPECT_EQ(left(vip, plain), plain_before - 30);
    EXPECT_EQ(left(vip, sharded), sharded_before - 2);
    EXPECT_EQ(left(vip, scarce), 0);
}

INSTANTIATE_TEST_SUITE_P(Storage, RequestAllStorageTest, ::testing::Values("durable", "unlogged", "memory"));

// A shadow limit never makes the call deny: its would-be denial is flagged, on its decision and on the
// overall one, and the other limits are consumed.
TEST_F(RequestAllTest, ShadowLimitNeverDenies) {
    const std::string real = test_support::define_limit("all_real", 5, "1 hour");
    const std::string trial = test_support::define_limit("all_trial", 1, "1 hour", -1, -1, "token_bucket", "memory");
    test_support::exec("SELECT rate_limit_define('" + trial + "', 1, '1 hour', storage => 'memory', shadow => true)");
    const std::string key = test_support::unique_key("k");
    EXPECT_FALSE(limiter->request_all({{key, real, 1}, {key, trial, 1}}).overall.shadow_denied);
    const pr::AllDecision all = limiter->request_all({{key, real, 1}, {key, trial, 1}});
    EXPECT_TRUE(all.allowed());
    EXPECT_TRUE(all.overall.shadow_denied);
    EXPECT_EQ(all.overall.retry_after.count(), 0);
    EXPECT_FALSE(all.decisions[0].shadow_denied);
    EXPECT_TRUE(all.decisions[1].allowed);
    EXPECT_TRUE(all.decisions[1].shadow_denied);
    EXPECT_EQ(left(key, real), 3);
}

TEST_F(RequestAllTest, BadInputThrowsAndConsumesNothing) {
    const std::string small = test_support::define_limit("all_small", 3, "1 hour", -1, -1, "token_bucket", "memory");
    const std::string key = test_support::unique_key("k");
    EXPECT_THROW((void)limiter->request_all({}), std::invalid_argument);
    EXPECT_THROW((void)limiter->request_all({{key, small, 1}, {key, "no_such_limit_" + key, 1}}), pr::UnknownLimit);
    EXPECT_THROW((void)limiter->request_all({{key, small, 1}, {key, small, 4}}), pr::InvalidArgument);
    EXPECT_THROW((void)limiter->request_all({{key, small, 1}, {key, small, -1}}), pr::InvalidArgument);
    EXPECT_THROW((void)limiter->request_all({{key, small, 1}, {std::string(1025, 'x'), small, 1}}),
                 pr::InvalidArgument);
    EXPECT_THROW((void)limiter->request_all({{key, small, 1}, {std::string("a\0b", 3), small, 1}}),
                 pr::InvalidArgument);
    EXPECT_EQ(left(key, small), 3);
}

TEST_F(RequestAllTest, InTransactionRollsBackWithTheCaller) {
    const std::string a = test_support::define_limit("all_tx_a", 2, "1 hour");
    const std::string b = test_support::define_limit("all_tx_b", 2, "1 hour");
    const std::string key = test_support::unique_key("k");
    auto conn = test_support::connect();
    {
        pqxx::work tx{*conn};
        EXPECT_TRUE(limiter->request_all(tx, {{key, a, 1}, {key, b, 2}}).allowed());
        const pr::AllDecision denied = limiter->request_all(tx, {{key, a, 1}, {key, b, 1}});
        EXPECT_FALSE(denied.allowed());
        EXPECT_TRUE(denied.decisions[0].allowed);
        tx.abort();
    }
    EXPECT_EQ(left(key, a), 2);
    EXPECT_EQ(left(key, b), 2);
    {
        pqxx::work tx{*conn};
        EXPECT_TRUE(limiter->request_all(tx, {{key, b, 1}, {key, a, 1}}).allowed());
        tx.commit();
    }
    EXPECT_EQ(left(key, a), 1);
    EXPECT_EQ(left(key, b), 1);
}

// Two threads ask for (A, B) and (B, A) on the same key, over and over: no deadlock ever (40P01 would be
// counted), and exactly the allowance is admitted from each limit, all or nothing.
class RequestAllOrderTest : public RequestAllTest, public ::testing::WithParamInterface<pr::isolation> {};

TEST_P(RequestAllOrderTest, OppositeOrdersNeverDeadlockAndAdmitExactly) {
    constexpr int allowance = 40;
    constexpr int calls_per_thread = 60;
    const std::string a = test_support::define_limit("all_ord_a", allowance, "1000 days");
    const std::string b = test_support::define_limit("all_ord_b", allowance, "1000 days");
    const std::string key = test_support::unique_key("hot");
    pr::Options options{4};
    options.level = GetParam();
    pr::Limiter pooled(test_support::conninfo(), options);
    std::atomic<int> admitted{0};
    std::atomic<int> mismatched{0};
    test_support::Barrier start(2);
    // Named, not braced lists in the call: g++ 16 took those inside ?: for dangling temporaries.
    const std::vector<pr::LimitRequest> a_then_b = {{key, a, 1}, {key, b, 1}};
    const std::vector<pr::LimitRequest> b_then_a = {{key, b, 1}, {key, a, 1}};
    auto worker = [&](bool a_first) {
        start.arrive_and_wait();
        for (int i = 0; i < calls_per_thread; ++i) {
            const pr::AllDecision all = pooled.request_all(a_first ? a_then_b : b_then_a);
            if (all.allowed()) ++admitted;
            if (all.allowed() != (all.decisions[0].allowed && all.decisions[1].allowed)) ++mismatched;
        }
    };
    std::thread first(worker, true);
    std::thread second(worker, false);
    first.join();
    second.join();
    EXPECT_EQ(admitted.load(), allowance);
    EXPECT_EQ(mismatched.load(), 0);
    EXPECT_EQ(pooled.stats().deadlocks, 0U);
    EXPECT_EQ(pooled.stats().exhausted, 0U);
    EXPECT_EQ(left(key, a), 0);
    EXPECT_EQ(left(key, b), 0);
}

INSTANTIATE_TEST_SUITE_P(Isolation, RequestAllOrderTest,
                         ::testing::Values(pr::isolation::read_committed, pr::isolation::repeatable_read,
                                           pr::isolation::serializable));

// The client refuses rows it cannot attribute: a decision must never go to another key or limit.
TEST(RequestAllRows, RowsAreCheckedAgainstTheRequests) {
    auto conn = test_support::connect();
    pqxx::nontransaction tx{*conn};
    const std::vector<pr::LimitRequest> requests = {{"k", "l", 1}};
    const std::string row0 = "(0, NULL::text, NULL::text, true, 1::int8, 0::numeric, 0::numeric, false)";
    const auto rows = [&](const std::string &values) { return tx.exec("SELECT * FROM (VALUES " + values + ") AS r"); };
    const auto all = pr::detail::all_decision_from_rows(rows(row0 + ", (1, 'k', 'l', true, 1, 0, 0, false)"), requests);
    EXPECT_TRUE(all.allowed());
    EXPECT_EQ(all.decisions.at(0).limit, "l");
    EXPECT_THROW(pr::detail::all_decision_from_rows(rows(row0), requests), std::runtime_error);
    EXPECT_THROW(pr::detail::all_decision_from_rows(rows(row0 + ", (1, 'x', 'l', true, 1, 0, 0, false)"), requests),
                 std::runtime_error);
    EXPECT_THROW(pr::detail::all_decision_from_rows(rows(row0 + ", (1, 'k', 'm', true, 1, 0, 0, false)"), requests),
                 std::runtime_error);
    EXPECT_THROW(pr::detail::all_decision_from_rows(rows(row0 + ", (2, 'k', 'l', true, 1, 0, 0, false)"), requests),
                 std::runtime_error);
    EXPECT_THROW(pr::detail::all_decision_from_rows(
                     rows("(1, 'k', 'l', true, 1, 0, 0, false), (1, 'k', 'l', true, 1, 0, 0, false)"), requests),
                 std::runtime_error);
}

}  // namespace
