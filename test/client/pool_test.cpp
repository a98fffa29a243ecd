// One Limiter shared by many threads: the pool, pooled retries, lost connections, in-doubt commits.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdio>
#include <future>
#include <pg_ratelimit/client.hpp>
#include <pqxx/pqxx>
#include <thread>
#include <vector>

#include "pqxx_compat.hpp"
#include "support.hpp"

namespace compat = pg_ratelimit::compat;
namespace pr = pg_ratelimit;

namespace {

class PoolTest : public test_support::ServerTest {
  protected:
    void SetUp() override {
        ServerTest::SetUp();
        limit = test_support::define_limit("pool", 1, "1 day", 50);
        key = test_support::unique_key("hot");
    }

    // `threads` threads each make `per_thread` pooled requests on key; returns how many were allowed.
    static int hammer(pr::Limiter &limiter, const std::string &key, const std::string &limit, int threads,
                      int per_thread) {
        std::atomic<int> allowed{0};
        std::vector<std::thread> workers;
        workers.reserve(threads);
        for (int t = 0; t < threads; ++t)
            workers.emplace_back([&] {
                for (int i = 0; i < per_thread; ++i) allowed += limiter.request(key, limit).allowed;
            });
        for (auto &w : workers) w.join();
        return allowed.load();
    }

    static pr::Options hammer_options(pr::isolation level) {
        pr::Options options;
        options.pool_size = 4;
        options.level = level;
        options.retry.max_attempts = 1000;
        options.retry.max_elapsed = std::chrono::seconds{60};
        options.retry.max_delay = std::chrono::milliseconds{20};
        return options;
    }

    std::string limit;
    std::string key;
};

}  // namespace

// Sixteen threads on four serializable connections hammer one key: 40001 happens for real and is
// retried, and exactly the allowance is admitted.
TEST_F(PoolTest, SerializableHammerAdmitsExactlyTheAllowance) {
    pr::Limiter limiter{test_support::conninfo(), hammer_options(pr::isolation::serializable)};
    EXPECT_EQ(hammer(limiter, key, limit, 16, 20), 50);
    EXPECT_EQ(test_support::units_left(limiter, key, limit), 0);
    const pr::RetryStats stats = limiter.stats();
    std::printf("[ stats    ] 320 requests: %llu retries (%llu x 40001, %llu x 40P01)\n",
                static_cast<unsigned long long>(stats.retries),
                static_cast<unsigned long long>(stats.serialization_failures),
                static_cast<unsigned long long>(stats.deadlocks));
    EXPECT_GT(stats.serialization_failures, 0u) << "the hammer provoked no 40001";
    EXPECT_EQ(stats.retries, stats.serialization_failures + stats.deadlocks);
    EXPECT_EQ(stats.exhausted, 0u);
}

// At READ COMMITTED the server settles concurrent callers itself: same total, no retries needed.
TEST_F(PoolTest, ReadCommittedHammerNeedsNoRetries) {
    pr::Limiter limiter{test_support::conninfo(), hammer_options(pr::isolation::read_committed)};
    EXPECT_EQ(hammer(limiter, key, limit, 16, 20), 50);
    EXPECT_EQ(limiter.stats().retries, 0u);
}

// Many threads, distinct keys, a pool smaller than the thread count: every key gets exactly its own
// allowance, whichever connection served it.
TEST_F(PoolTest, ManyThreadsManyKeysSmallPool) {
    pr::Options options;
    options.pool_size = 2;
    pr::Limiter limiter{test_support::conninfo(), options};
    const std::string small = test_support::define_limit("pool_small", 1, "1 day", 5);
    constexpr int threads = 12;
    std::vector<std::future<int>> results;
    results.reserve(threads);
    for (int t = 0; t < threads; ++t)
        results.push_back(std::async(std::launch::async, [&limiter, &small, t] {
            const std::string own = "thread_" + std::to_string(t);
            int allowed = 0;
            for (int i = 0; i < 8; ++i) allowed += limiter.request(own, small).allowed;
            return allowed;
        }));
    for (auto &r : results) EXPECT_EQ(r.get(), 5);
}

// A call that cannot get a connection in time fails with PoolTimeout instead of hanging.
TEST_F(PoolTest, ExhaustedPoolTimesOut) {
    const std::string app = test_support::unique_key("client_timeout");
    pr::Options options;
    options.pool_size = 1;
    options.acquire_timeout = std::chrono::milliseconds{100};
    pr::Limiter limiter{test_support::conninfo_with_application_name(app), options};
    (void)limiter.request(key, limit);  // the key has a row to lock

    // Hold the key's row lock elsewhere, so the pool's only connection blocks inside a request.
    auto blocker = test_support::connect();
    pqxx::work lock{*blocker};
    compat::exec_params(lock, "SELECT 1 FROM rate_limit_state WHERE limit_name = $1 AND key = $2 FOR UPDATE", limit,
                        key);
    auto blocked = std::async(std::launch::async, [&] { return limiter.request(key, limit).allowed; });
    ASSERT_TRUE(test_support::wait_for_lock_wait(app)) << "the pooled request never blocked on the row lock";

    EXPECT_THROW((void)limiter.check("other", limit), pr::PoolTimeout);
    lock.commit();
    EXPECT_TRUE(blocked.get());
    EXPECT_TRUE(limiter.check("other", limit).allowed);  // the connection is back
}

// The server kills every pooled backend (as on a restart or a failover): the next calls reconnect.
TEST_F(PoolTest, LostConnectionsAreReplaced) {
    const std::string app = test_support::unique_key("client_pool");
    pr::Options options;
    options.pool_size = 3;
    pr::Limiter limiter{test_support::conninfo_with_application_name(app), options};
    EXPECT_EQ(hammer(limiter, key, limit, 6, 2), 12);  // opens more than one connection
    EXPECT_GE(test_support::terminate_backends(app), 1);

    EXPECT_TRUE(limiter.request(key, limit).allowed);
    EXPECT_TRUE(limiter.check(key, limit).allowed);
    EXPECT_EQ(test_support::units_left(limiter, key, limit), 50 - 13);
    const pr::RetryStats stats = limiter.stats();
    EXPECT_GE(stats.connections_lost, 1u);
    EXPECT_EQ(stats.exhausted, 0u);
}

// The pooled transaction's COMMIT loses its connection: the call throws pqxx::in_doubt_error and is
// not retried, because the units may or may not have been consumed.
//
// To kill a backend exactly during COMMIT without touching the extension, the Limiter is pointed (by
// Options::schema) at a schema of thin wrappers around pg_ratelimit's functions. Each wrapper also
// logs its call in a table whose deferred trigger, run by COMMIT, terminates the backend when that
// kind of call is "armed".
TEST_F(PoolTest, InDoubtPooledCommitIsSurfaced) {
    const std::string s = test_support::unique_key("client_doomed");
    test_support::exec("CREATE SCHEMA " + s + R"(;
        CREATE TABLE )" +
                       s + R"(.armed (call text PRIMARY KEY);
        CREATE TABLE )" +
                       s + R"(.calls (call text);
        CREATE FUNCTION )" +
                       s + R"(.die_if_armed() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
            IF EXISTS (SELECT 1 FROM )" +
                       s + R"(.armed WHERE call = NEW.call) THEN
                PERFORM pg_terminate_backend(pg_backend_pid());
                PERFORM pg_sleep(5);
            END IF;
            RETURN NULL;
        END $$;
        CREATE CONSTRAINT TRIGGER die AFTER INSERT ON )" +
                       s + R"(.calls DEFERRABLE INITIALLY DEFERRED
            FOR EACH ROW EXECUTE FUNCTION )" +
                       s + R"(.die_if_armed();
        CREATE VIEW )" +
                       s + R"(.rate_limit_config AS SELECT * FROM public.rate_limit_config;
        CREATE FUNCTION )" +
                       s + R"(.rate_limit_request(text, text, float8, boolean)
            RETURNS public.rate_limit_decision LANGUAGE sql AS $$
            INSERT INTO )" +
                       s + R"(.calls VALUES ('request');
            SELECT * FROM public.rate_limit_request($1, $2, $3, $4) $$;
        CREATE FUNCTION )" +
                       s + R"(.rate_limit_refund(text, text, float8)
            RETURNS public.rate_limit_decision LANGUAGE sql AS $$
            INSERT INTO )" +
                       s + R"(.calls VALUES ('refund');
            SELECT * FROM public.rate_limit_refund($1, $2, $3) $$;
        CREATE FUNCTION )" +
                       s + R"(.rate_limit_check(text, text, float8)
            RETURNS public.rate_limit_decision LANGUAGE sql AS $$ SELECT * FROM public.rate_limit_check($1, $2, $3) $$;
        CREATE FUNCTION )" +
                       s + R"(.rate_limit_reset(text, text)
            RETURNS void LANGUAGE sql AS $$ SELECT public.rate_limit_reset($1, $2) $$;
        CREATE FUNCTION )" +
                       s + R"(.rate_limit_policy(text, text)
            RETURNS TABLE (algorithm text, rate float8, period interval, capacity float8, max_reserved float8,
                           overridden boolean, limit_has_overrides boolean, time_zone text)
            LANGUAGE sql AS $$ SELECT * FROM public.rate_limit_policy($1, $2) $$;)");
    pr::Options options;
    options.schema = s;
    pr::Limiter limiter{test_support::conninfo(), options};
    EXPECT_TRUE(limiter.request(key, limit).allowed);  // nothing armed yet
    pr::Reservation r = limiter.reserve(key, limit);
    ASSERT_TRUE(r.ok());

    test_support::exec("INSERT INTO " + s + ".armed VALUES ('request')");
    EXPECT_THROW((void)limiter.request(key, limit), pqxx::in_doubt_error);
    EXPECT_EQ(limiter.stats().retries, 0u);

    // Same for a reservation's cancel(): afterwards it counts as cancelled, so it never refunds twice.
    test_support::exec("INSERT INTO " + s + ".armed VALUES ('refund')");
    EXPECT_THROW(r.cancel(), pqxx::in_doubt_error);
    EXPECT_TRUE(r.cancelled());
    EXPECT_FALSE(r.cancel());
    EXPECT_EQ(limiter.stats().retries, 0u);

    // The limiter carries on with new connections. (Here both doomed commits did not happen: the
    // backend died before finishing COMMIT; only the client could not know.)
    test_support::exec("DELETE FROM " + s + ".armed");
    EXPECT_TRUE(limiter.request(key, limit).allowed);
    EXPECT_EQ(test_support::units_left(limiter, key, limit), 50 - 3);
    test_support::exec("DROP SCHEMA " + s + " CASCADE");
}
