// The concurrency hammer: many connections, many requests, one key, at each isolation level, on one row
// or split over hot-key shards. Whatever the interleaving, the admitted total must equal the allowance
// exactly (the limit's refill over the test is negligible). Each request is its own transaction run by the client
// library's run_transaction, which retries serialization failures (40001) and deadlocks (40P01); any other error, or
// running out of retries, fails the test.
#include <gtest/gtest.h>

#include <pg_ratelimit/retry.hpp>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <mutex>
#include <ostream>
#include <pqxx/pqxx>
#include <string>
#include <thread>
#include <vector>

#include "pqxx_compat.hpp"

namespace compat = pg_ratelimit::compat;

namespace {

constexpr int kThreads = 8;
constexpr int kRequestsPerThread = 150;
using Level = pg_ratelimit::isolation;

std::string level_name(Level level) {
    switch (level) {
        case Level::read_committed:
            return "read_committed";
        case Level::repeatable_read:
            return "repeatable_read";
        case Level::serializable:
            return "serializable";
    }
    return "";
}

struct Scenario {
    Level level;
    std::string algorithm;
    double allowance;  // rate = capacity
    double cost;
    bool warm_key;                    // the key's row exists before the hammer starts (else: new-key race)
    int shards = 1;                   // hot-key shards (core/shards.hpp): the allowance split over that many rows
    std::string storage = "durable";  // durable, unlogged or memory (extension/state/memory_state.hpp)
    bool calendar = false;            // fixed windows: a calendar window of 100 years in Europe/Paris
    bool shadow = false;  // shadow mode: every call allowed; those not flagged shadow_denied are the admitted
};

std::string describe(const Scenario &s) {
    return level_name(s.level) + "_" + s.algorithm + (s.cost == 1 ? "" : "_fractional") +
           (s.warm_key ? "_warm" : "_new_key") + (s.shards == 1 ? "" : "_" + std::to_string(s.shards) + "_shards") +
           (s.storage == "durable" ? "" : "_" + s.storage) + (s.calendar ? "_calendar" : "") +
           (s.shadow ? "_shadow" : "");
}

std::string scenario_name(const testing::TestParamInfo<Scenario> &info) { return describe(info.param); }

void PrintTo(const Scenario &s, std::ostream *out) { *out << describe(s); }

// Releases all threads at once, so the first requests really race.
class StartLine {
  public:
    explicit StartLine(int parties) : waiting_(parties) {}
    void arrive_and_wait() {
        std::unique_lock<std::mutex> lock(mutex_);
        if (--waiting_ == 0) cv_.notify_all();
        cv_.wait(lock, [this] { return waiting_ == 0; });
    }

  private:
    std::mutex mutex_;
    std::condition_variable cv_;
    int waiting_;
};

struct Tally {
    std::atomic<int> admitted{0};
    std::atomic<int> denied{0};
    std::atomic<int> retries{0};
};

// Eight clients on one key collide constantly at REPEATABLE READ and SERIALIZABLE: allow far more
// attempts and time than an application would, so only a real failure can exhaust them.
pg_ratelimit::RetryPolicy patient_policy(Tally &tally) {
    pg_ratelimit::RetryPolicy policy;
    policy.max_attempts = 1000;
    policy.max_elapsed = std::chrono::seconds(60);
    policy.base_delay = std::chrono::microseconds(100);
    policy.max_delay = std::chrono::microseconds(5000);
    policy.on_retry = [&tally](const pg_ratelimit::RetryEvent &) { ++tally.retries; };
    return policy;
}

// One request in its own transaction at the scenario's level; returns whether it was admitted.
// Whether the call was admitted: allowed, and (shadow mode) not merely let through. A shadow limit must
// never answer allowed = false: that is a failure of its own.
bool request_once(pqxx::connection &conn, const Scenario &s, const std::string &limit,
                  const pg_ratelimit::RetryPolicy &policy) {
    return pg_ratelimit::run_transaction(
        conn, s.level,
        [&](pqxx::work &tx) {
            const pqxx::row row = compat::exec_params1(
                tx, "SELECT allowed, shadow_denied FROM rate_limit_request('hot', $1, $2)", limit, s.cost);
            const bool allowed = row[0].as<bool>();
            if (s.shadow && !allowed) throw std::runtime_error("a shadow limit denied a call");
            return allowed && !row[1].as<bool>();
        },
        policy);
}

class Hammer : public testing::TestWithParam<Scenario> {};

TEST_P(Hammer, AdmitsExactlyTheAllowance) {
    const Scenario &s = GetParam();
    const std::string limit = "hammer_" + describe(s);
    {
        pqxx::connection admin{""};
        pqxx::work tx{admin};
        tx.exec("CREATE EXTENSION IF NOT EXISTS pg_ratelimit");
        // No window opens during the test: 1,000 days, or the calendar window of 2000-2099.
        compat::exec_params(
            tx,
            "SELECT rate_limit_define($1, rate => $2, period => $3::interval, algorithm => $4, shards => $5, "
            "storage => $6, time_zone => $7, shadow => $8)",
            limit, s.allowance, s.calendar ? "100 years" : "1000 days", s.algorithm, s.shards, s.storage,
            s.calendar ? "Europe/Paris" : nullptr, s.shadow);
        compat::exec_params(tx, "SELECT rate_limit_reset('hot', $1)", limit);
        if (s.warm_key) {
            // A request and its refund leave the key full, with its row in place.
            compat::exec_params(tx, "SELECT rate_limit_request('hot', $1)", limit);
            compat::exec_params(tx, "SELECT rate_limit_refund('hot', $1)", limit);
        }
        tx.commit();
    }

    Tally tally;
    const pg_ratelimit::RetryPolicy policy = patient_policy(tally);
    StartLine start{kThreads};
    std::vector<std::thread> threads;
    threads.reserve(kThreads);
    std::atomic<int> failures{0};
    for (int t = 0; t < kThreads; ++t) {
        threads.emplace_back([&] {
            try {
                pqxx::connection conn{""};
                start.arrive_and_wait();
                for (int i = 0; i < kRequestsPerThread; ++i) {
                    if (request_once(conn, s, limit, policy))
                        ++tally.admitted;
                    else
                        ++tally.denied;
                }
            } catch (const std::exception &e) {
                ++failures;
                ADD_FAILURE() << "thread failed: " << e.what();
            }
        });
    }
    for (auto &thread : threads) thread.join();

    const int attempts = kThreads * kRequestsPerThread;
    const int allowance = static_cast<int>(s.allowance / s.cost);
    ASSERT_EQ(failures.load(), 0);
    EXPECT_EQ(tally.admitted.load(), allowance);
    EXPECT_EQ(tally.denied.load(), attempts - allowance);
    RecordProperty("retries", tally.retries.load());
    std::printf("[ info ] %s: %d admitted of %d, %d retries after 40001/40P01\n", limit.c_str(), tally.admitted.load(),
                attempts, tally.retries.load());

    pqxx::connection check{""};
    pqxx::work tx{check};
    const pqxx::row state =
        compat::exec_params1(tx, "SELECT remaining FROM rate_limit_check('hot', $1, $2)", limit, s.cost);
    EXPECT_EQ(state[0].as<long>(), 0) << "the key must be exhausted, not over- or under-consumed";
    compat::exec_params(tx, "SELECT rate_limit_drop($1)", limit);
    tx.commit();
}

std::vector<Scenario> scenarios() {
    std::vector<Scenario> all;
    for (Level level : {Level::read_committed, Level::repeatable_read, Level::serializable}) {
        all.push_back({level, "token_bucket", 400, 1, false});
        all.push_back({level, "token_bucket", 300, 1, true});
        all.push_back({level, "fixed_window", 400, 1, false});
        all.push_back({level, "gcra", 400, 1, false});
        all.push_back({level, "sliding_window", 400, 1, true});
        all.push_back({level, "token_bucket", 200, 0.5, false});
        all.push_back({level, "gcra", 200, 0.5, true});
        // Sharded keys: every shard drained exactly, none overdrawn, whichever shard each call picks.
        all.push_back({level, "token_bucket", 400, 1, false, 4});
        all.push_back({level, "fixed_window", 400, 1, true, 16});
        all.push_back({level, "gcra", 400, 1, false, 4});
        all.push_back({level, "sliding_window", 400, 1, true, 4});
        // The other storage modes: an unlogged table, and shared memory (the server preloads the library).
        for (const char *storage : {"unlogged", "memory"}) {
            all.push_back({level, "token_bucket", 400, 1, false, 1, storage});
            all.push_back({level, "fixed_window", 300, 1, true, 1, storage});
            all.push_back({level, "token_bucket", 400, 1, false, 4, storage});
            all.push_back({level, "gcra", 300, 1, false, 1, storage});
            all.push_back({level, "sliding_window", 300, 1, true, 4, storage});
        }
        // Calendar windows (a fixed window's grid of local midnights) in each storage.
        all.push_back({level, "fixed_window", 400, 1, false, 1, "durable", true});
        all.push_back({level, "fixed_window", 400, 1, true, 4, "unlogged", true});
        all.push_back({level, "fixed_window", 300, 1, true, 1, "memory", true});
        // Shadow mode: exactly the allowance goes through unflagged, every other call is let through
        // flagged, and nothing beyond the allowance is consumed (the key ends exhausted, not in debt).
        all.push_back({level, "token_bucket", 400, 1, false, 1, "durable", false, true});
        all.push_back({level, "gcra", 300, 1, true, 4, "memory", false, true});
    }
    return all;
}

INSTANTIATE_TEST_SUITE_P(Levels, Hammer, testing::ValuesIn(scenarios()), scenario_name);

}  // namespace
