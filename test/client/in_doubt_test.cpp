// A pooled call whose connection breaks after the server acted on it: never applied twice. A proxy cuts the
// connection right after the server answered the call's statement (cut_proxy.hpp); the key's state then
// shows how many times the call took effect.
#include <gtest/gtest.h>

#include <pg_ratelimit/client.hpp>
#include <pqxx/pqxx>
#include <vector>

#include "cut_proxy.hpp"
#include "support.hpp"

namespace pr = pg_ratelimit;
using test_support::CutProxy;

namespace {

constexpr double CAPACITY = 10;

class InDoubtTest : public test_support::ServerTest {
  protected:
    void SetUp() override {
        ServerTest::SetUp();
        proxy = std::make_unique<CutProxy>();
        direct = std::make_unique<pr::Limiter>(test_support::conninfo());
        key = test_support::unique_key("k");
        // One connection: the cut one is replaced by a new one through the proxy, which passes it untouched.
        pr::Options options;
        options.pool_size = 1;
        limiter = std::make_unique<pr::Limiter>(proxy->conninfo(), options);
    }

    // A limit of CAPACITY units a day (nothing refills during a test) with the given storage.
    static std::string limit_stored(const std::string &storage) {
        return test_support::define_limit("in_doubt_" + storage, 1, "1 day", CAPACITY, -1, "token_bucket", storage);
    }

    std::int64_t left(const std::string &limit) { return left(key, limit); }
    std::int64_t left(const std::string &of_key, const std::string &limit) {
        return test_support::units_left(*direct, of_key, limit);
    }

    std::unique_ptr<CutProxy> proxy;
    std::unique_ptr<pr::Limiter> direct;  // reads the keys' state, around the proxy
    std::unique_ptr<pr::Limiter> limiter;
    std::string key;
};

// Runs call, which must throw InDoubt naming the server function `function` and asking for (key, limit,
// cost) first; the proxy must have cut exactly once.
template <typename Call>
void expect_in_doubt(CutProxy &proxy, Call &&call, const std::string &function, const std::string &key,
                     const std::string &limit, double cost) {
    try {
        call();
        ADD_FAILURE() << function << ": no InDoubt (the call returned)";
    } catch (const pr::InDoubt &error) {
        EXPECT_EQ(error.call(), function);
        ASSERT_FALSE(error.requests().empty());
        EXPECT_EQ(error.requests()[0].key, key);
        EXPECT_EQ(error.requests()[0].limit, limit);
        EXPECT_EQ(error.requests()[0].cost, cost);
        // libpqxx's own "may or may not have happened", which nothing retries.
        EXPECT_NE(dynamic_cast<const pqxx::in_doubt_error *>(&error), nullptr);
    } catch (const std::exception &error) {
        ADD_FAILURE() << function << ": " << typeid(error).name() << " instead of InDoubt: " << error.what();
    }
    EXPECT_EQ(proxy.cuts(), 1) << "the proxy never cut: the test proved nothing";
}

}  // namespace

// The case: one request on a memory limit whose answer is lost took 2 units. Now it takes 1 and
// says it may have.
TEST_F(InDoubtTest, MemoryRequestWithItsAnswerLostIsAppliedOnceAndInDoubt) {
    const std::string limit = limit_stored("memory");
    proxy->arm("pg_ratelimit_request", CutProxy::Cut::answer_lost);
    expect_in_doubt(
        *proxy, [&] { (void)limiter->request(key, limit); }, "rate_limit_request", key, limit, 1);
    EXPECT_EQ(left(limit), CAPACITY - 1);
    EXPECT_EQ(limiter->stats().in_doubt, 1u);
    EXPECT_TRUE(limiter->request(key, limit).allowed);  // the Limiter carries on
    EXPECT_EQ(left(limit), CAPACITY - 2);
}

// The other case: one refund(1) gave back 2 units.
TEST_F(InDoubtTest, MemoryRefundWithItsAnswerLostIsAppliedOnceAndInDoubt) {
    const std::string limit = limit_stored("memory");
    (void)direct->request(key, limit, 3);
    proxy->arm("pg_ratelimit_refund", CutProxy::Cut::answer_lost);
    expect_in_doubt(
        *proxy, [&] { (void)limiter->refund(key, limit, 1); }, "rate_limit_refund", key, limit, 1);
    EXPECT_EQ(left(limit), CAPACITY - 2);
}

// The answer arrived, and the connection broke right after it: noticed at once, or by the policy read that
// follows the limit's first call. The memory decision stands, and the call is in doubt.
TEST_F(InDoubtTest, MemoryRequestCutAfterItsAnswerIsAppliedOnceAndInDoubt) {
    const std::string limit = limit_stored("memory");
    proxy->arm("pg_ratelimit_request", CutProxy::Cut::after_answer);
    expect_in_doubt(
        *proxy, [&] { (void)limiter->request(key, limit); }, "rate_limit_request", key, limit, 1);
    EXPECT_EQ(left(limit), CAPACITY - 1);
}

// Every other pooled call that changes a memory key: request_many, request_all, enforce, reset, a
// reservation's cancel() and settle(), wait()'s reservation. Each applied once, each in doubt.
TEST_F(InDoubtTest, EveryPooledCallOnAMemoryLimitIsAppliedOnce) {
    const std::string limit = limit_stored("memory");
    const std::string durable = limit_stored("durable");
    const std::string other = test_support::unique_key("other");

    proxy->arm("pg_ratelimit_request_many", CutProxy::Cut::answer_lost);
    expect_in_doubt(
        *proxy,
        [&] {
            (void)limiter->request_many({key, other}, limit, {2, 1});
        },
        "rate_limit_request_many", key, limit, 2);
    EXPECT_EQ(left(key, limit), CAPACITY - 2);
    EXPECT_EQ(left(other, limit), CAPACITY - 1);

    // One memory limit among durable ones suffices; the durable part rolled back with its transaction.
    CutProxy all;
    pr::Limiter via_all{all.conninfo()};
    all.arm("pg_ratelimit_request_all", CutProxy::Cut::answer_lost);
    expect_in_doubt(
        all,
        [&] {
            (void)via_all.request_all({{other, durable, 1}, {other, limit, 1}});
        },
        "rate_limit_request_all", other, durable, 1);
    EXPECT_EQ(left(other, durable), CAPACITY);
    EXPECT_EQ(left(other, limit), CAPACITY - 2);

    CutProxy enforce;
    pr::Limiter via_enforce{enforce.conninfo()};
    enforce.arm("pg_ratelimit_enforce", CutProxy::Cut::answer_lost);
    expect_in_doubt(
        enforce, [&] { via_enforce.enforce(key, limit); }, "rate_limit_enforce", key, limit, 1);
    EXPECT_EQ(left(key, limit), CAPACITY - 3);

    CutProxy waiting;
    pr::Limiter via_wait{waiting.conninfo()};
    waiting.arm("pg_ratelimit_reserve", CutProxy::Cut::answer_lost);
    expect_in_doubt(
        waiting, [&] { (void)via_wait.wait(key, limit, std::chrono::milliseconds{1000}); }, "rate_limit_reserve", key,
        limit, 1);
    EXPECT_EQ(left(key, limit), CAPACITY - 4);

    // A reservation whose cancel() is in doubt counts as cancelled: it never refunds twice.
    test_support::exec("GRANT EXECUTE ON FUNCTION rate_limit_settle(text, text, float8, float8) TO CURRENT_USER");
    CutProxy cancel;
    pr::Limiter via_cancel{cancel.conninfo()};
    pr::Reservation r = via_cancel.reserve(key, limit, 2);
    ASSERT_TRUE(r.ok());
    cancel.arm("pg_ratelimit_refund", CutProxy::Cut::answer_lost);
    expect_in_doubt(
        cancel, [&] { (void)r.cancel(); }, "rate_limit_refund", key, limit, 2);
    EXPECT_TRUE(r.cancelled());
    EXPECT_FALSE(r.cancel());
    EXPECT_EQ(left(key, limit), CAPACITY - 4);

    CutProxy settle;
    pr::Limiter via_settle{settle.conninfo()};
    pr::Reservation s = via_settle.reserve(key, limit, 3);
    ASSERT_TRUE(s.ok());
    settle.arm("pg_ratelimit_settle", CutProxy::Cut::answer_lost);
    expect_in_doubt(
        settle, [&] { (void)s.settle(1); }, "rate_limit_settle", key, limit, 1);
    EXPECT_TRUE(s.settled());
    EXPECT_EQ(left(key, limit), CAPACITY - 5);  // 3 reserved, 2 of them given back once

    // reset: run twice, it would also erase what others took in between.
    CutProxy reset;
    pr::Limiter via_reset{reset.conninfo()};
    reset.arm("pg_ratelimit_reset", CutProxy::Cut::answer_lost);
    expect_in_doubt(
        reset, [&] { via_reset.reset(key, limit); }, "rate_limit_reset", key, limit, 0);
    EXPECT_EQ(left(key, limit), CAPACITY);
}

// Durable and unlogged limits live in tables: the uncommitted transaction of the cut attempt rolled back,
// so the call is run again, transparently, and applied exactly once.
TEST_F(InDoubtTest, TableStorageCutBeforeCommitIsRetriedAndAppliedOnce) {
    for (const std::string storage : {"durable", "unlogged"}) {
        SCOPED_TRACE(storage);
        const std::string limit = limit_stored(storage);
        CutProxy cut;
        pr::Options options;
        options.policy_ttl = std::chrono::milliseconds{0};  // a policy read follows every call, before COMMIT
        pr::Limiter via{cut.conninfo(), options};
        cut.arm("pg_ratelimit_request", CutProxy::Cut::answer_lost);
        const pr::Decision d = via.request(key, limit);
        EXPECT_EQ(cut.cuts(), 1);
        EXPECT_TRUE(d.allowed);
        EXPECT_EQ(d.remaining, CAPACITY - 1);
        EXPECT_EQ(left(limit), CAPACITY - 1);

        (void)direct->request(key, limit, 4);
        cut.arm("pg_ratelimit_refund", CutProxy::Cut::after_answer);
        EXPECT_EQ(via.refund(key, limit, 2).remaining, CAPACITY - 3);
        EXPECT_EQ(cut.cuts(), 2);
        EXPECT_EQ(left(limit), CAPACITY - 3);

        const pr::RetryStats stats = via.stats();
        EXPECT_EQ(stats.connections_lost, 2u);
        EXPECT_EQ(stats.retries, 2u);
        EXPECT_EQ(stats.in_doubt, 0u);
    }
}

// Whatever the storage, a connection lost during COMMIT leaves the call in doubt (libpqxx cannot tell
// whether COMMIT arrived): never retried.
TEST_F(InDoubtTest, CommitLostIsInDoubtForEveryStorage) {
    for (const std::string storage : {"durable", "memory"}) {
        SCOPED_TRACE(storage);
        const std::string limit = limit_stored(storage);
        CutProxy cut;
        pr::Limiter via{cut.conninfo()};
        cut.arm("pg_ratelimit_request", CutProxy::Cut::commit_lost);
        expect_in_doubt(
            cut, [&] { (void)via.request(key, limit); }, "rate_limit_request", key, limit, 1);
        EXPECT_EQ(via.stats().retries, 0u);
        // Here COMMIT never reached the server: a table's consumption rolled back, memory's did not.
        EXPECT_EQ(left(limit), storage == "durable" ? CAPACITY : CAPACITY - 1);
    }
}

// A pooled connection whose backend died while idle breaks at BEGIN, before the call's statement is
// sent: nothing can have been applied, so even a memory call is run again on a new connection.
TEST_F(InDoubtTest, DeadIdlePooledConnectionIsRetriedTransparently) {
    const std::string limit = limit_stored("memory");
    const std::string app = test_support::unique_key("client_in_doubt_idle");
    pr::Options options;
    options.pool_size = 2;
    pr::Limiter pooled{test_support::conninfo_with_application_name(app), options};
    EXPECT_TRUE(pooled.request(key, limit).allowed);
    EXPECT_TRUE(pooled.refund(key, limit, 1).allowed);
    EXPECT_GE(test_support::terminate_backends(app), 1);

    EXPECT_TRUE(pooled.request(key, limit).allowed);
    EXPECT_EQ(pooled.refund(key, limit, 1).remaining, CAPACITY);
    EXPECT_TRUE(pooled.request(key, limit).allowed);
    EXPECT_EQ(left(limit), CAPACITY - 1);
    const pr::RetryStats stats = pooled.stats();
    EXPECT_GE(stats.connections_lost, 1u);
    EXPECT_EQ(stats.in_doubt, 0u);
    EXPECT_EQ(stats.exhausted, 0u);
}

// Retries run out before the lost statement's storage could be read (the server stays unreachable): the
// call may have taken effect, so it must not surface as a plain broken connection either.
TEST_F(InDoubtTest, GivingUpBeforeTheStorageIsKnownIsInDoubt) {
    const std::string limit = limit_stored("memory");
    pr::Options options;
    options.pool_size = 1;
    options.retry.max_attempts = 1;  // no attempt left to read the storage
    pr::Limiter once{proxy->conninfo(), options};
    proxy->arm("pg_ratelimit_request", CutProxy::Cut::answer_lost);
    expect_in_doubt(
        *proxy, [&] { (void)once.request(key, limit); }, "rate_limit_request", key, limit, 1);
    EXPECT_EQ(left(limit), CAPACITY - 1);  // applied once; a plain broken_connection would invite a retry
}
