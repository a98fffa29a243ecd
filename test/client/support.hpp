// Shared by the client's server tests: the connection to the throwaway server, the extension, and
// limits with names unique to each test, so tests can run in any order and in parallel.
#pragma once

#include <gtest/gtest.h>

#include <condition_variable>
#include <cstddef>
#include <memory>
#include <mutex>
#include <pg_ratelimit/limiter.hpp>
#include <pqxx/connection>
#include <string>

namespace test_support {

// The libpq connection string of the test server: $PG_RATELIMIT_TEST_CONNINFO, else "" (PGHOST etc.).
std::string conninfo();

// A new connection to the test server.
std::unique_ptr<pqxx::connection> connect();

// Defines a limit named after `stem`, the process and a counter (unique per test run) and returns the
// name. period is an SQL interval literal; capacity < 0 means the default (= rate); max_reserved < 0
// means NULL (unlimited). storage: 'durable', 'unlogged' or 'memory' (the last needs the server started
// with shared_preload_libraries = 'pg_ratelimit', as scripts/test.sh starts it).
std::string define_limit(const std::string &stem, double rate, const std::string &period, double capacity = -1,
                         double max_reserved = -1, const std::string &algorithm = "token_bucket",
                         const std::string &storage = "durable");

// A fresh key (unique per process and call).
std::string unique_key(const std::string &stem);

// Runs one SQL statement in its own transaction on a new connection.
void exec(const std::string &sql);

// Blocks each arriving thread until `count` threads have arrived (C++17 has no std::barrier).
class Barrier {
  public:
    explicit Barrier(std::size_t count) : count_(count) {}
    void arrive_and_wait() {
        std::unique_lock<std::mutex> lock(mutex_);
        if (++arrived_ >= count_) {
            released_.notify_all();
            return;
        }
        released_.wait(lock, [this] { return arrived_ >= count_; });
    }

  private:
    std::mutex mutex_;
    std::condition_variable released_;
    std::size_t count_;
    std::size_t arrived_ = 0;
};

// conninfo() plus application_name=name, to find a Limiter's backends in pg_stat_activity.
std::string conninfo_with_application_name(const std::string &name);

// Terminates (and waits for) every backend whose application_name is name; returns how many.
int terminate_backends(const std::string &application_name);

// The whole units key holds now. (check() reports what a request would leave, one unit less.)
std::int64_t units_left(pg_ratelimit::Limiter &limiter, const std::string &key, const std::string &limit);

// Waits (up to 10 s) until a backend with this application_name waits for a lock; false on timeout.
bool wait_for_lock_wait(const std::string &application_name);

// A new database on the test server named after stem (unique per run), with CREATE EXTENSION pg_ratelimit
// in it (at `version` when given, else the default version); returns its name. Drop it with drop_database.
std::string create_database(const std::string &stem, const std::string &version = "");
void drop_database(const std::string &name);

// conninfo() for another database of the test server.
std::string conninfo_for_database(const std::string &name);

// Base fixture: fails (never skips) when no server is reachable, and installs the extension if needed.
class ServerTest : public ::testing::Test {
  protected:
    void SetUp() override;
};

}  // namespace test_support
