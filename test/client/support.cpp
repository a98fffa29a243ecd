#include "support.hpp"

#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <pqxx/nontransaction>
#include <pqxx/transaction>
#include <thread>

#include "pqxx_compat.hpp"

namespace compat = pg_ratelimit::compat;

namespace test_support {
namespace {

std::atomic<int> counter{0};

std::string unique_suffix() { return std::to_string(getpid()) + "_" + std::to_string(++counter); }

}  // namespace

std::string conninfo() {
    const char *env = std::getenv("PG_RATELIMIT_TEST_CONNINFO");
    return env != nullptr ? env : "";
}

std::unique_ptr<pqxx::connection> connect() { return std::make_unique<pqxx::connection>(conninfo()); }

void exec(const std::string &sql) {
    auto conn = connect();
    pqxx::work tx{*conn};
    tx.exec(sql);
    tx.commit();
}

std::string define_limit(const std::string &stem, double rate, const std::string &period, double capacity,
                         double max_reserved, const std::string &algorithm, const std::string &storage) {
    std::string name = "client_" + stem + "_" + unique_suffix();
    auto conn = connect();
    pqxx::work tx{*conn};
    compat::exec_params(
        tx,
        "SELECT rate_limit_define($1, $2, $3::interval, $4, nullif($5::float8, -1), nullif($6::float8, -1),"
        " storage => $7)",
        name, rate, period, algorithm, capacity < 0 ? -1.0 : capacity, max_reserved < 0 ? -1.0 : max_reserved, storage);
    tx.commit();
    return name;
}

std::string unique_key(const std::string &stem) { return stem + "_" + unique_suffix(); }

std::string conninfo_with_application_name(const std::string &name) {
    const std::string base = conninfo();
    return (base.empty() ? "" : base + " ") + "application_name=" + name;
}

int terminate_backends(const std::string &application_name) {
    auto conn = connect();
    pqxx::work tx{*conn};
    const pqxx::row row =
        compat::exec_params1(tx,
                             "SELECT count(*) FILTER (WHERE pg_terminate_backend(pid, 5000)) FROM pg_stat_activity"
                             " WHERE application_name = $1 AND pid <> pg_backend_pid()",
                             application_name);
    tx.commit();
    return row[0].as<int>();
}

std::int64_t units_left(pg_ratelimit::Limiter &limiter, const std::string &key, const std::string &limit) {
    const pg_ratelimit::Decision d = limiter.check(key, limit);
    return d.allowed ? d.remaining + 1 : d.remaining;
}

bool wait_for_lock_wait(const std::string &application_name) {
    auto conn = test_support::connect();
    for (int i = 0; i < 1000; ++i) {
        pqxx::nontransaction tx{*conn};
        const pqxx::row row = compat::exec_params1(
            tx, "SELECT count(*) FROM pg_stat_activity WHERE application_name = $1 AND wait_event_type = 'Lock'",
            application_name);
        if (row[0].as<int>() > 0) return true;
        std::this_thread::sleep_for(std::chrono::milliseconds{10});
    }
    return false;
}

std::string conninfo_for_database(const std::string &name) {
    const std::string base = conninfo();
    return (base.empty() ? "" : base + " ") + "dbname=" + name;  // later keywords win
}

std::string create_database(const std::string &stem, const std::string &version) {
    std::string name = "client_" + stem + "_" + unique_suffix();
    {
        auto conn = connect();
        pqxx::nontransaction tx{*conn};  // CREATE DATABASE cannot run inside a transaction block
        tx.exec("CREATE DATABASE " + tx.quote_name(name));
    }
    pqxx::connection conn{conninfo_for_database(name)};
    pqxx::work tx{conn};
    tx.exec("CREATE EXTENSION pg_ratelimit" + (version.empty() ? std::string{} : " VERSION " + tx.quote(version)));
    tx.commit();
    return name;
}

void drop_database(const std::string &name) {
    auto conn = connect();
    pqxx::nontransaction tx{*conn};
    tx.exec("DROP DATABASE IF EXISTS " + tx.quote_name(name) + " WITH (FORCE)");
}

void ServerTest::SetUp() {
    try {
        auto conn = connect();
        pqxx::work tx{*conn};
        // Test processes may start together (ctest -j): serialize the CREATE EXTENSION.
        tx.exec("SELECT pg_advisory_xact_lock(7245031)");
        tx.exec("CREATE EXTENSION IF NOT EXISTS pg_ratelimit");
        tx.commit();
    } catch (const std::exception &error) {
        FAIL() << "no PostgreSQL server with pg_ratelimit reachable (" << error.what()
               << "); these tests need one: run them through scripts/test.sh or after start_cluster";
    }
}

}  // namespace test_support
