// run_transaction and the in-transaction calls: real 40001 / 40P01 conflicts, errors that must not be
// retried, lost connections, and in-doubt commits.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdio>
#include <mutex>
#include <pg_ratelimit/client.hpp>
#include <pqxx/pqxx>
#include <thread>
#include <vector>

#include "pqxx_compat.hpp"
#include "support.hpp"

namespace compat = pg_ratelimit::compat;
namespace pr = pg_ratelimit;
using test_support::Barrier;

namespace {

// Records every retry event; thread-safe.
struct Recorder {
    std::mutex mutex;
    std::vector<pr::RetryEvent> events;
    pr::RetryPolicy policy(int max_attempts = 50, std::chrono::milliseconds max_elapsed = std::chrono::seconds{30}) {
        pr::RetryPolicy p;
        p.max_attempts = max_attempts;
        p.max_elapsed = max_elapsed;
        p.on_retry = [this](const pr::RetryEvent &e) {
            std::lock_guard<std::mutex> guard(mutex);
            events.push_back(e);
        };
        return p;
    }
    std::size_t count(pr::RetryReason reason) {
        std::lock_guard<std::mutex> guard(mutex);
        std::size_t n = 0;
        for (const auto &e : events) n += e.reason == reason;
        return n;
    }
    std::size_t size() {
        std::lock_guard<std::mutex> guard(mutex);
        return events.size();
    }
};

class RetryTest : public test_support::ServerTest {
  protected:
    void SetUp() override {
        ServerTest::SetUp();
        limit = test_support::define_limit("retry", 1, "1 day", 10);
        key = test_support::unique_key("k");
        limiter = std::make_unique<pr::Limiter>(test_support::conninfo());
    }
    std::int64_t remaining() { return test_support::units_left(*limiter, key, limit); }

    std::string limit;
    std::string key;
    std::unique_ptr<pr::Limiter> limiter;
};

// Consumes one unit for key from a separate connection, committed before returning.
void consume_elsewhere(const std::string &key, const std::string &limit) {
    auto conn = test_support::connect();
    pqxx::work tx{*conn};
    compat::exec_params(tx, "SELECT rate_limit_request($1, $2)", key, limit);
    tx.commit();
}

}  // namespace

class SnapshotConflict : public RetryTest, public ::testing::WithParamInterface<pr::isolation> {};

// Deterministic step order: the transaction takes its snapshot, another connection then updates and
// commits the key, and the transaction's own update of the key raises 40001. The whole function runs
// again and succeeds; every unit is counted exactly once.
TEST_P(SnapshotConflict, ConflictingUpdateIsRetriedAsAWholeTransaction) {
    (void)limiter->request(key, limit);  // the key has a row: the conflict is an UPDATE
    auto conn = test_support::connect();
    Recorder recorder;
    int calls = 0;
    const pr::Decision d = pr::run_transaction(
        *conn, GetParam(),
        [&](pqxx::work &tx) {
            ++calls;
            tx.exec("SELECT 1");  // takes the snapshot
            if (calls == 1) consume_elsewhere(key, limit);
            return limiter->request(tx, key, limit);
        },
        recorder.policy());
    EXPECT_TRUE(d.allowed);
    EXPECT_EQ(calls, 2);
    ASSERT_EQ(recorder.size(), 1u);
    EXPECT_EQ(recorder.events[0].reason, pr::RetryReason::serialization_failure);
    EXPECT_EQ(recorder.events[0].attempt, 1);
    EXPECT_EQ(d.remaining, 7);
    EXPECT_EQ(remaining(), 7);  // 10 - setup - elsewhere - ours
}

INSTANTIATE_TEST_SUITE_P(Levels, SnapshotConflict,
                         ::testing::Values(pr::isolation::repeatable_read, pr::isolation::serializable),
                         [](const ::testing::TestParamInfo<pr::isolation> &info) {
                             return info.param == pr::isolation::serializable ? "serializable" : "repeatable_read";
                         });

// The in-transaction call itself never retries: the 40001 reaches the caller at once.
TEST_F(RetryTest, InTransactionCallDoesNotRetryByItself) {
    (void)limiter->request(key, limit);
    auto conn = test_support::connect();
    pqxx::work tx{*conn};
    tx.exec("SET TRANSACTION ISOLATION LEVEL SERIALIZABLE");
    tx.exec("SELECT 1");
    consume_elsewhere(key, limit);
    EXPECT_THROW((void)limiter->request(tx, key, limit), pqxx::serialization_failure);
    EXPECT_EQ(limiter->stats().retries, 0u);
    EXPECT_EQ(remaining(), 8);
}

// Two serializable transactions race for a hot key: both take their snapshot, then both update it.
TEST_F(RetryTest, TwoSerializableTransactionsOnAHotKey) {
    (void)limiter->request(key, limit);
    Barrier snapshots_taken(2);
    Recorder recorder;
    std::atomic<int> calls{0};
    auto worker = [&] {
        auto conn = test_support::connect();
        bool first = true;
        pr::run_transaction(
            *conn, pr::isolation::serializable,
            [&](pqxx::work &tx) {
                ++calls;
                tx.exec("SELECT 1");
                if (first) snapshots_taken.arrive_and_wait();
                first = false;
                EXPECT_TRUE(limiter->request(tx, key, limit).allowed);
            },
            recorder.policy());
    };
    std::thread a(worker), b(worker);
    a.join();
    b.join();
    EXPECT_GE(recorder.count(pr::RetryReason::serialization_failure), 1u);
    EXPECT_EQ(calls.load(), 2 + static_cast<int>(recorder.size()));
    EXPECT_EQ(remaining(), 7);  // exactly one unit each
}

// Many threads, each with its own connection, run serializable transactions that consume a unit and
// record it in an application table. Exactly the allowance is admitted, and the application's rows
// agree with the limiter because both commit (or retry) together.
TEST_F(RetryTest, HammerAdmitsExactlyTheAllowance) {
    const std::string log_table = test_support::unique_key("client_hammer_log");
    test_support::exec("CREATE TABLE " + log_table + " (id serial PRIMARY KEY, allowed boolean NOT NULL)");
    constexpr int threads = 8;
    constexpr int per_thread = 6;
    Recorder recorder;
    std::atomic<int> admitted{0};
    std::vector<std::thread> pool;
    pool.reserve(threads);
    for (int t = 0; t < threads; ++t)
        pool.emplace_back([&] {
            auto conn = test_support::connect();
            for (int i = 0; i < per_thread; ++i) {
                const bool allowed = pr::run_transaction(
                    *conn, pr::isolation::serializable,
                    [&](pqxx::work &tx) {
                        const pr::Decision d = limiter->request(tx, key, limit);
                        compat::exec_params(tx, "INSERT INTO " + log_table + " (allowed) VALUES ($1)", d.allowed);
                        return d.allowed;
                    },
                    recorder.policy(1000, std::chrono::seconds{60}));
                admitted += allowed;
            }
        });
    for (auto &t : pool) t.join();
    EXPECT_EQ(admitted.load(), 10);
    EXPECT_EQ(remaining(), 0);
    auto conn = test_support::connect();
    pqxx::work tx{*conn};
    EXPECT_EQ(compat::exec1(tx, "SELECT count(*) FROM " + log_table + " WHERE allowed")[0].as<int>(), 10);
    EXPECT_EQ(compat::exec1(tx, "SELECT count(*) FROM " + log_table)[0].as<int>(), threads * per_thread);
    tx.exec("DROP TABLE " + log_table);
    tx.commit();
    std::printf("[ stats    ] %d transactions: %zu retries on 40001\n", threads * per_thread,
                recorder.count(pr::RetryReason::serialization_failure));
    EXPECT_GT(recorder.count(pr::RetryReason::serialization_failure), 0u) << "the hammer provoked no 40001";
}

// Two transactions take two keys' row locks in opposite orders: the server aborts one with 40P01, and
// run_transaction runs it again.
TEST_F(RetryTest, DeadlockIsRetried) {
    const std::string other = test_support::unique_key("k2");
    Barrier first_locks_held(2);
    Recorder recorder;
    auto worker = [&](const std::string &first, const std::string &second) {
        auto conn = test_support::connect();
        bool first_attempt = true;
        pr::run_transaction(
            *conn, pr::isolation::read_committed,
            [&](pqxx::work &tx) {
                // The deadlock is found after deadlock_timeout (1 s by default); the extension's own bound on
                // waiting for a key (pg_ratelimit.lock_wait, 1 s by default: 55P03, not retried) must not
                // strike first.
                tx.exec("SET LOCAL deadlock_timeout = '100ms'");
                EXPECT_TRUE(limiter->request(tx, first, limit).allowed);
                if (first_attempt) first_locks_held.arrive_and_wait();
                first_attempt = false;
                EXPECT_TRUE(limiter->request(tx, second, limit).allowed);
            },
            recorder.policy());
    };
    std::thread a(worker, key, other), b(worker, other, key);
    a.join();
    b.join();
    // Usually one; under load the victim's retry can grab its first key again before the survivor
    // gets it, and deadlock once more.
    EXPECT_GE(recorder.count(pr::RetryReason::deadlock), 1u);
    EXPECT_EQ(remaining(), 8);
    EXPECT_EQ(test_support::units_left(*limiter, other, limit), 8);
}

TEST_F(RetryTest, OtherErrorsAreNotRetried) {
    auto conn = test_support::connect();
    Recorder recorder;
    const std::string table = test_support::unique_key("client_unique");
    test_support::exec("CREATE TABLE " + table + " (id int PRIMARY KEY)");

    int calls = 0;
    EXPECT_THROW(pr::run_transaction(
                     *conn, pr::isolation::serializable,
                     [&](pqxx::work &tx) {
                         ++calls;
                         (void)limiter->request(tx, key, limit);
                         tx.exec("INSERT INTO " + table + " VALUES (1), (1)");
                     },
                     recorder.policy()),
                 pqxx::unique_violation);
    EXPECT_EQ(calls, 1);

    calls = 0;
    EXPECT_THROW(pr::run_transaction(*conn, pr::isolation::serializable,
                                     [&](pqxx::work &tx) {
                                         ++calls;
                                         (void)limiter->request(tx, key, limit);
                                         throw std::runtime_error("application failure");
                                     }),
                 std::runtime_error);
    EXPECT_EQ(calls, 1);

    calls = 0;
    try {
        pr::run_transaction(*conn, pr::isolation::serializable, [&](pqxx::work &tx) {
            ++calls;
            (void)limiter->request(tx, key, limit);
            (void)limiter->request(tx, key, "client_no_such_limit");
        });
        ADD_FAILURE() << "no exception";
    } catch (const pr::UnknownLimit &error) {
        EXPECT_EQ(error.sqlstate(), "42704");
    }
    EXPECT_EQ(calls, 1);

    EXPECT_EQ(recorder.size(), 0u);
    EXPECT_EQ(remaining(), 10);  // every failed transaction rolled its consumption back
    test_support::exec("DROP TABLE " + table);
}

TEST_F(RetryTest, GivesUpAfterMaxAttemptsWithTheOriginalError) {
    (void)limiter->request(key, limit);
    auto conn = test_support::connect();
    Recorder recorder;
    int calls = 0;
    EXPECT_THROW(pr::run_transaction(
                     *conn, pr::isolation::serializable,
                     [&](pqxx::work &tx) {
                         ++calls;
                         tx.exec("SELECT 1");
                         consume_elsewhere(key, limit);  // every attempt conflicts
                         (void)limiter->request(tx, key, limit);
                     },
                     recorder.policy(3)),
                 pqxx::serialization_failure);
    EXPECT_EQ(calls, 3);
    EXPECT_EQ(recorder.size(), 2u);
}

TEST_F(RetryTest, GivesUpWhenOutOfTime) {
    (void)limiter->request(key, limit);
    auto conn = test_support::connect();
    Recorder recorder;
    pr::RetryPolicy policy = recorder.policy(1000, std::chrono::milliseconds{0});
    int calls = 0;
    EXPECT_THROW(pr::run_transaction(
                     *conn, pr::isolation::serializable,
                     [&](pqxx::work &tx) {
                         ++calls;
                         tx.exec("SELECT 1");
                         consume_elsewhere(key, limit);
                         (void)limiter->request(tx, key, limit);
                     },
                     policy),
                 pqxx::serialization_failure);
    EXPECT_EQ(calls, 1);
}

// The backend dies before COMMIT: the transaction cannot have committed, so it is run again on a new
// connection.
TEST_F(RetryTest, LostConnectionBeforeCommitIsReestablishedAndRetried) {
    auto conn = test_support::connect();
    Recorder recorder;
    int calls = 0;
    const pr::Decision d = pr::run_transaction(
        *conn, pr::isolation::read_committed,
        [&](pqxx::work &tx) {
            ++calls;
            pr::Decision inner = limiter->request(tx, key, limit);
            if (calls == 1) tx.exec("SELECT pg_terminate_backend(pg_backend_pid())");
            return inner;
        },
        recorder.policy());
    EXPECT_TRUE(d.allowed);
    EXPECT_EQ(calls, 2);
    EXPECT_EQ(recorder.count(pr::RetryReason::connection_lost), 1u);
    EXPECT_EQ(remaining(), 9);  // the first attempt's unit died with its backend
    pqxx::work tx{*conn};       // and the caller's connection works again
    EXPECT_EQ(compat::exec1(tx, "SELECT 1")[0].as<int>(), 1);
}

// The backend dies DURING COMMIT (a deferred trigger, run by COMMIT, terminates it): the client cannot
// know whether the transaction committed, so run_transaction surfaces pqxx::in_doubt_error and does
// not run the function again.
TEST_F(RetryTest, InDoubtCommitIsSurfacedNotRetried) {
    const std::string table = test_support::unique_key("client_doomed");
    test_support::exec("CREATE TABLE " + table + " (id int)");
    test_support::exec("CREATE FUNCTION " + table +
                       "_die() RETURNS trigger LANGUAGE plpgsql AS $$"
                       " BEGIN PERFORM pg_terminate_backend(pg_backend_pid()); PERFORM pg_sleep(5); RETURN NULL; END"
                       " $$");
    test_support::exec("CREATE CONSTRAINT TRIGGER die AFTER INSERT ON " + table +
                       " DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION " + table + "_die()");
    auto conn = test_support::connect();
    Recorder recorder;
    int calls = 0;
    EXPECT_THROW(pr::run_transaction(
                     *conn, pr::isolation::serializable,
                     [&](pqxx::work &tx) {
                         ++calls;
                         (void)limiter->request(tx, key, limit);
                         tx.exec("INSERT INTO " + table + " VALUES (1)");
                     },
                     recorder.policy()),
                 pqxx::in_doubt_error);
    EXPECT_EQ(calls, 1);
    EXPECT_EQ(recorder.size(), 0u);
    test_support::exec("DROP TABLE " + table + "; DROP FUNCTION " + table + "_die()");
}
