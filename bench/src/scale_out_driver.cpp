// The load of bench/scale_out.sh: CLIENTS threads deciding keys (uniform over KEYS) of one limit for
// SECONDS, and the number of decisions they got. Two ways to call:
//   limiter  the C++ client (a Limiter, pooled calls), on one server or on Options::partitions
//   sql      one libpqxx connection per thread and a prepared SELECT * FROM rate_limit_request($1, $2) in
//            autocommit: a single node directly, or PL/Proxy's proxy, which speaks the same SQL
// Usage: pg_ratelimit_scale_out_bench limiter|sql LIMIT CLIENTS SECONDS KEYS CONNINFO [CONNINFO...]
//        (limiter with several CONNINFOs: they are the partitions, in order)
// Prints "decisions N denied D errors E seconds S".
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <pg_ratelimit/client.hpp>
#include <pqxx/pqxx>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "pqxx_compat.hpp"

namespace {

using Clock = std::chrono::steady_clock;

struct Totals {
    std::atomic<long> decisions{0};
    std::atomic<long> denied{0};
    std::atomic<long> errors{0};
};

struct Load {
    std::string mode;
    std::string limit;
    int clients = 0;
    double seconds = 0;
    long keys = 0;
    std::vector<std::string> servers;
};

template <typename Decide>
void run_client(const Load &load, unsigned seed, Totals &totals, Decide decide) {
    std::mt19937_64 random(seed);
    std::uniform_int_distribution<long> key_of(1, load.keys);
    const Clock::time_point end =
        Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(load.seconds));
    while (Clock::now() < end) {
        try {
            if (!decide("k" + std::to_string(key_of(random)))) ++totals.denied;
            ++totals.decisions;
        } catch (const std::exception &error) {
            if (++totals.errors <= 3) std::fprintf(stderr, "error: %s\n", error.what());
        }
    }
}

}  // namespace

int main(int argc, char **argv) {
    if (argc < 7) {
        std::fprintf(stderr, "usage: %s limiter|sql LIMIT CLIENTS SECONDS KEYS CONNINFO [CONNINFO...]\n", argv[0]);
        return 2;
    }
    Load load;
    load.mode = argv[1];
    load.limit = argv[2];
    load.clients = std::atoi(argv[3]);
    load.seconds = std::atof(argv[4]);
    load.keys = std::atol(argv[5]);
    for (int i = 6; i < argc; ++i) load.servers.emplace_back(argv[i]);
    Totals totals;
    std::vector<std::thread> threads;
    const Clock::time_point started = Clock::now();
    if (load.mode == "limiter") {
        pg_ratelimit::Options options;
        options.pool_size = static_cast<std::size_t>(load.clients);
        if (load.servers.size() > 1) options.partitions = load.servers;
        pg_ratelimit::Limiter limiter{load.servers.size() > 1 ? std::string() : load.servers[0], options};
        for (int c = 0; c < load.clients; ++c)
            threads.emplace_back([&, c] {
                run_client(load, static_cast<unsigned>(c + 1), totals,
                           [&](const std::string &key) { return limiter.request(key, load.limit).allowed; });
            });
        for (std::thread &thread : threads) thread.join();
    } else if (load.mode == "sql") {
        for (int c = 0; c < load.clients; ++c)
            threads.emplace_back([&, c] {
                pqxx::connection connection{load.servers[0]};
                connection.prepare("decide", "SELECT allowed FROM rate_limit_request($1, $2)");
                run_client(load, static_cast<unsigned>(c + 1), totals, [&](const std::string &key) {
                    pqxx::nontransaction tx{connection};
                    return pg_ratelimit::compat::exec_prepared1(tx, "decide", key, load.limit)[0].as<bool>();
                });
            });
        for (std::thread &thread : threads) thread.join();
    } else {
        std::fprintf(stderr, "unknown mode %s\n", load.mode.c_str());
        return 2;
    }
    const double elapsed = std::chrono::duration<double>(Clock::now() - started).count();
    std::printf("decisions %ld denied %ld errors %ld seconds %.3f\n", totals.decisions.load(), totals.denied.load(),
                totals.errors.load(), elapsed);
    return totals.errors.load() > 0 ? 1 : 0;
}
