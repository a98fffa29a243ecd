// The crash test's load driver (test/crash/crash_test.sh runs it): several clients, each on its own
// connection, call rate_limit_request until the server is killed under them, then it writes what each
// key was acknowledged, for the script to compare with what crash recovery kept.
//
//   crash_load --round N --counts FILE [--ready FILE] [--clients 8] [--seed S] [--max-seconds 60]
//
// Connects through the libpq environment. Writes FILE as tab-separated lines
// "limit  key  acknowledged  in_doubt" (units; see KeyCounts), one per key with either count non-zero,
// and FILE of --ready once every client is connected. Exit status: 0 when every client lost its
// connection (the crash), 3 when --max-seconds passed first (no crash came), 2 on any other error,
// 1 on bad arguments.
#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "load_client.hpp"
#include "workload.hpp"

namespace {

struct Options {
    int round = 0;
    int clients = 8;
    unsigned long long seed = 1;
    int max_seconds = 60;
    std::string counts;
    std::string ready;
};

[[noreturn]] void usage(const char *problem) {
    std::cerr << "crash_load: " << problem << "\n"
              << "usage: crash_load --round N --counts FILE [--ready FILE] [--clients N] [--seed S] "
                 "[--max-seconds S]\n";
    std::exit(1);
}

Options parse(int argc, char **argv) {
    Options options;
    for (int i = 1; i < argc; ++i) {
        const std::string name = argv[i];
        if (i + 1 >= argc) usage(("missing value after " + name).c_str());
        const std::string value = argv[++i];
        try {
            if (name == "--round")
                options.round = std::stoi(value);
            else if (name == "--clients")
                options.clients = std::stoi(value);
            else if (name == "--seed")
                options.seed = std::stoull(value);
            else if (name == "--max-seconds")
                options.max_seconds = std::stoi(value);
            else if (name == "--counts")
                options.counts = value;
            else if (name == "--ready")
                options.ready = value;
            else
                usage(("unknown option " + name).c_str());
        } catch (const std::logic_error &) {
            usage(("bad value for " + name).c_str());
        }
    }
    if (options.counts.empty()) usage("--counts is required");
    if (options.clients < 1) usage("--clients must be at least 1");
    return options;
}

// Sorted, so that two runs with the same counts write the same file.
bool write_counts(const std::string &path, const std::vector<crash::ClientResult> &results) {
    std::map<std::string, crash::KeyCounts> merged;
    for (const crash::ClientResult &result : results) {
        for (const auto &[key, counts] : result.tally) {
            crash::KeyCounts &total = merged[key];
            total.acknowledged += counts.acknowledged;
            total.in_doubt += counts.in_doubt;
        }
    }
    std::ofstream out{path};
    for (const auto &[key, counts] : merged)
        out << key << '\t' << counts.acknowledged << '\t' << counts.in_doubt << '\n';
    out.close();
    return !out.fail();
}

}  // namespace

int main(int argc, char **argv) {
    const Options options = parse(argc, argv);
    std::signal(SIGPIPE, SIG_IGN);  // a write on a socket the dead server closed must fail, not kill us

    std::atomic<bool> stop{false};
    std::atomic<int> connected{0};
    std::vector<crash::ClientResult> results(options.clients);
    std::vector<std::thread> threads;
    threads.reserve(options.clients);
    std::atomic<int> finished{0};
    for (int c = 0; c < options.clients; ++c) {
        threads.emplace_back([&, c] {
            results[c] = crash::run_client(crash::Workload{options.round, c, options.seed}, stop, [&] { ++connected; });
            ++finished;
        });
    }

    using Clock = std::chrono::steady_clock;
    const Clock::time_point deadline = Clock::now() + std::chrono::seconds(options.max_seconds);
    bool ready_written = options.ready.empty();
    while (finished.load() < options.clients) {
        if (!ready_written && connected.load() == options.clients) {
            std::ofstream{options.ready} << "ready\n";
            ready_written = true;
        }
        if (Clock::now() >= deadline) stop = true;
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    for (std::thread &thread : threads) thread.join();

    crash::ClientStats total;
    int lost = 0;
    int failed = 0;
    for (const crash::ClientResult &result : results) {
        total.committed += result.stats.committed;
        total.admitted += result.stats.admitted;
        total.denied += result.stats.denied;
        total.retries += result.stats.retries;
        total.in_doubt += result.stats.in_doubt;
        if (result.ending == crash::Ending::connection_lost) ++lost;
        if (result.ending == crash::Ending::failed) {
            ++failed;
            std::cerr << "crash_load: a client failed: " << result.error << "\n";
        }
    }
    const bool written = write_counts(options.counts, results);
    std::printf(
        "crash_load round %d: %d clients, %ld operations committed (%ld admissions acknowledged, %ld denials), "
        "%ld retries after 40001/40P01, %ld admissions in doubt, %d connections lost\n",
        options.round, options.clients, total.committed, total.admitted, total.denied, total.retries, total.in_doubt,
        lost);
    if (!written) {
        std::cerr << "crash_load: cannot write " << options.counts << "\n";
        return 2;
    }
    if (failed > 0) return 2;
    if (lost < options.clients) {
        std::cerr << "crash_load: " << options.clients - lost << " clients still connected after "
                  << options.max_seconds << " s: the server did not crash\n";
        return 3;
    }
    return 0;
}
