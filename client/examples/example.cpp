// pg_ratelimit C++ client: a tour of the API, run by the README's demonstration.
//
//   pg_ratelimit_example ["libpq connection string"]     (default: the PG* environment variables)
//
// Needs a database with CREATE EXTENSION pg_ratelimit and a role allowed to call rate_limit_define()
// (the example defines its own limits, all named example_*, and resets its keys, so it can be rerun).
//
// Its own SQL uses what libpqxx 6.4, 7 and 8 all have: exec() of a statement, with values quoted by quote()
// (parameters are spelled exec_params(sql, args...) in 6.4, exec(sql, pqxx::params{args...}) from 7 on).
#include <atomic>
#include <chrono>
#include <iostream>
#include <pg_ratelimit/client.hpp>
#include <pqxx/pqxx>
#include <thread>
#include <vector>

namespace pr = pg_ratelimit;

namespace {

void define_limits(pqxx::connection &conn) {
    pqxx::work tx{conn};
    tx.exec("SELECT rate_limit_define('example_send_message', 5, '10 seconds')");
    tx.exec("SELECT rate_limit_define('example_hot', 20, '1 day')");
    tx.exec("SELECT rate_limit_define('example_failed_login', 3, '1 hour')");
    tx.exec("SELECT rate_limit_define('example_throttle', 10, '1 second', capacity => 1)");
    for (const char *limit : {"example_send_message", "example_hot", "example_failed_login", "example_throttle"})
        for (const char *key : {"user1", "user2", "hot", "203.0.113.7", "worker"})
            tx.exec("SELECT rate_limit_reset(" + tx.quote(key) + ", " + tx.quote(limit) + ")");
    tx.commit();
}

void print_headers(const pr::Decision &d) {
    for (const pr::HttpField &field : d.headers()) std::cout << "      " << field.name << ": " << field.value << "\n";
}

void single_requests(pr::Limiter &limiter) {
    std::cout << "\n== 1. request(): user1 sends 7 messages (example_send_message: 5 per 10 seconds)\n";
    for (int i = 1; i <= 7; ++i) {
        const pr::Decision d = limiter.request("user1", "example_send_message");
        std::cout << "  message " << i << ": " << (d.allowed ? "allowed" : "denied (HTTP 429)") << ", " << d.remaining
                  << " left\n";
        if (!d.allowed && i == 6) print_headers(d);
    }
}

void many_threads(const std::string &conninfo) {
    std::cout << "\n== 2. 8 threads x 10 requests on one key, SERIALIZABLE pool (example_hot: 20 per day)\n";
    pr::Options options;
    options.pool_size = 4;
    options.level = pr::isolation::serializable;  // conflicts now abort with 40001 and are retried
    // The default options.retry (up to 100 attempts within 10 s) is sized for such a hot key.
    pr::Limiter limiter{conninfo, options};
    std::atomic<int> admitted{0};
    std::vector<std::thread> threads;
    threads.reserve(8);
    for (int t = 0; t < 8; ++t)
        threads.emplace_back([&] {
            for (int i = 0; i < 10; ++i) admitted += limiter.request("hot", "example_hot").allowed;
        });
    for (auto &t : threads) t.join();
    const pr::RetryStats stats = limiter.stats();
    std::cout << "  admitted " << admitted << " of 80 (exactly the allowance); " << stats.serialization_failures
              << " serialization failures (40001) retried, " << stats.exhausted << " gave up\n";
}

void inside_a_transaction(pr::Limiter &limiter, const std::string &conninfo) {
    std::cout << "\n== 3. run_transaction(): user2's messages are stored in the transaction that consumes the unit\n";
    pqxx::connection conn{conninfo};
    pqxx::nontransaction{conn}.exec("CREATE TEMP TABLE messages (body text)");
    for (int i = 1; i <= 6; ++i) {
        const bool sent = pr::run_transaction(conn, pr::isolation::serializable, [&](pqxx::work &tx) {
            const pr::Decision d = limiter.request(tx, "user2", "example_send_message");
            if (d.allowed) tx.exec("INSERT INTO messages VALUES (" + tx.quote("hello " + std::to_string(i)) + ")");
            return d.allowed;
        });
        std::cout << "  transaction " << i << ": " << (sent ? "message stored" : "rate limited, nothing stored")
                  << "\n";
    }
    pqxx::work tx{conn};
    std::cout << "  messages table: " << tx.exec("SELECT count(*) FROM messages")[0][0].as<int>() << " rows\n";
}

int login(pr::Limiter &limiter, const std::string &ip, bool password_ok) {
    pr::Reservation r = limiter.reserve(ip, "example_failed_login");  // consumes now
    if (!r.ok()) return 429;
    if (password_ok) {
        r.cancel();  // a valid login gives its unit back: only failures count
        return 200;
    }
    return 401;  // the unit stays consumed
}

void reservations(pr::Limiter &limiter) {
    std::cout << "\n== 4. reserve()/cancel(): only failed logins count (example_failed_login: 3 per hour)\n";
    const bool attempts[] = {true, true, false, true, false, false, false, true};
    for (const bool password_ok : attempts)
        std::cout << "  login with " << (password_ok ? "right" : "wrong") << " password: HTTP "
                  << login(limiter, "203.0.113.7", password_ok) << "\n";
}

void throttling(pr::Limiter &limiter) {
    std::cout << "\n== 5. wait(): throttle instead of reject (example_throttle: 10 per second, burst 1)\n";
    const auto start = std::chrono::steady_clock::now();
    for (int i = 1; i <= 5; ++i) {
        const pr::Decision d = limiter.wait("worker", "example_throttle", std::chrono::milliseconds{500});
        const auto ms =
            std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - start).count();
        std::cout << "  job " << i << ": " << (d.allowed ? "ran" : "refused") << " at +" << (ms / 10) * 10 << " ms\n";
    }
}

}  // namespace

int main(int argc, char **argv) {
    const std::string conninfo = argc > 1 ? argv[1] : "";
    try {
        pqxx::connection admin{conninfo};
        define_limits(admin);
        pr::Limiter limiter{conninfo, pr::Options{2}};
        single_requests(limiter);
        many_threads(conninfo);
        inside_a_transaction(limiter, conninfo);
        reservations(limiter);
        throttling(limiter);
    } catch (const pqxx::insufficient_privilege &error) {
        std::cerr << "this example defines its own limits: run it as a role allowed to call rate_limit_define()\n"
                  << error.what();
        return 1;
    } catch (const std::exception &error) {
        std::cerr << "error: " << error.what() << "\n";
        return 1;
    }
    return 0;
}
