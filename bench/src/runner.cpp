// The time-boxed run: N threads, one worker (connection) each, latencies in per-thread vectors.
#include <algorithm>
#include <cmath>
#include <exception>
#include <thread>

#include "bench.hpp"

namespace bench {
namespace {

// xorshift64*: a few instructions per key, so the client's own cost stays out of the latencies.
struct Rng {
    std::uint64_t state;
    explicit Rng(std::uint64_t seed) : state(seed * 0x9E3779B97F4A7C15ull + 0x2545F4914F6CDD1Dull) {}
    std::uint64_t next() {
        state ^= state >> 12;
        state ^= state << 25;
        state ^= state >> 27;
        return state * 0x2545F4914F6CDD1Dull;
    }
};

// A key that no call has used: "k" and 19 random digits. It sorts among the preloaded keys ("k0" to
// "k99999"), so new keys land on every page of an index ordered by key rather than piling up at one end,
// and it can never be one of them (they have at most 5 digits). Two calls drawing the same 64 random bits
// are as likely as a hash collision of a 64-bit hash.
void new_key(Rng &rng, std::string &out) {
    constexpr std::uint64_t smallest = 1000000000000000000ull;  // 10^18, the least 19-digit number
    constexpr std::uint64_t span = 9 * smallest;                // 10^18 .. 10^19 - 1
    out = "k" + std::to_string(smallest + rng.next() % span);
}

struct ThreadResult {
    std::vector<std::int64_t> latencies_ns;
    Counters counters;
    std::string first_error;
};

void client_loop(Worker &worker, const std::vector<std::string> &keys, Dist dist, Clock::time_point begin,
                 Clock::time_point measure_from, Clock::time_point measure_to, std::uint64_t seed, ThreadResult &out) {
    Rng rng(seed);
    out.latencies_ns.reserve(1 << 16);
    Counters discard;  // warm-up calls count nothing
    std::string fresh;
    std::this_thread::sleep_until(begin);
    for (;;) {
        if (dist == Dist::fresh) new_key(rng, fresh);
        const std::string &key = dist == Dist::hot     ? keys[0]
                                 : dist == Dist::fresh ? fresh
                                                       : keys[rng.next() % keys.size()];
        const Clock::time_point t0 = Clock::now();
        if (t0 >= measure_to) break;
        const bool measured = t0 >= measure_from;
        Counters &counters = measured ? out.counters : discard;
        bool failed = false;
        try {
            worker.call(key, counters);
        } catch (const std::exception &e) {
            failed = true;
            ++counters.errors;
            if (measured && out.first_error.empty()) out.first_error = e.what();
        }
        const Clock::time_point t1 = Clock::now();
        if (failed) {
            worker.recover();
            continue;
        }
        if (measured) {
            ++out.counters.calls;
            out.latencies_ns.push_back(std::chrono::duration_cast<std::chrono::nanoseconds>(t1 - t0).count());
        }
    }
}

}  // namespace

double percentile(std::vector<std::int64_t> &samples, double p) {
    if (samples.empty()) return 0;
    const double rank = std::ceil(p * static_cast<double>(samples.size()));
    const std::size_t index = rank < 1 ? 0 : std::min(samples.size() - 1, static_cast<std::size_t>(rank) - 1);
    std::nth_element(samples.begin(), samples.begin() + static_cast<std::ptrdiff_t>(index), samples.end());
    return static_cast<double>(samples[index]);
}

double median(std::vector<double> values) {
    if (values.empty()) return 0;
    std::sort(values.begin(), values.end());
    const std::size_t n = values.size();
    return n % 2 == 1 ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2;
}

RunResult run_timed(std::vector<std::unique_ptr<Worker>> &workers, const std::vector<std::string> &keys, Dist dist,
                    double warmup_seconds, double measure_seconds, std::uint64_t seed) {
    using std::chrono::duration_cast;
    using std::chrono::nanoseconds;
    const auto to_duration = [](double s) { return duration_cast<Clock::duration>(std::chrono::duration<double>(s)); };
    // All threads start together, a little after they are created (thread creation takes tens of
    // microseconds), and share the window boundaries.
    const Clock::time_point begin = Clock::now() + std::chrono::milliseconds(3);
    const Clock::time_point measure_from = begin + to_duration(warmup_seconds);
    const Clock::time_point measure_to = measure_from + to_duration(measure_seconds);

    std::vector<ThreadResult> results(workers.size());
    std::vector<std::thread> threads;
    threads.reserve(workers.size());
    for (std::size_t i = 0; i < workers.size(); ++i)
        threads.emplace_back(client_loop, std::ref(*workers[i]), std::cref(keys), dist, begin, measure_from, measure_to,
                             seed * 1000 + i + 1, std::ref(results[i]));
    for (auto &t : threads) t.join();

    RunResult run;
    run.seconds = measure_seconds;
    std::vector<std::int64_t> all;
    std::size_t total = 0;
    for (const auto &r : results) total += r.latencies_ns.size();
    all.reserve(total);
    for (auto &r : results) {
        run.counters += r.counters;
        all.insert(all.end(), r.latencies_ns.begin(), r.latencies_ns.end());
        if (run.first_error.empty()) run.first_error = r.first_error;
    }
    run.tps = static_cast<double>(run.counters.calls) / measure_seconds;
    if (!all.empty()) {
        double sum = 0;
        for (std::int64_t v : all) sum += static_cast<double>(v);
        run.mean_us = sum / static_cast<double>(all.size()) / 1000;
        run.max_us = static_cast<double>(*std::max_element(all.begin(), all.end())) / 1000;
        run.p50_us = percentile(all, 0.50) / 1000;
        run.p99_us = percentile(all, 0.99) / 1000;
        run.p999_us = percentile(all, 0.999) / 1000;
    }
    run.latencies_ns = std::move(all);
    return run;
}

}  // namespace bench
