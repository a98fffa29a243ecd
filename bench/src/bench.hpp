// Shared types of the benchmark harness: what a measured system is, what one time-boxed run yields.
#pragma once

#include <array>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace bench {

using Clock = std::chrono::steady_clock;

// Which key each call uses: uniform over the preloaded keys, always the first one (the hot key), or one no
// call has used before (every call creates its key's row).
enum class Dist { uniform, hot, fresh };
enum class Isolation { autocommit, serializable };

inline const char *dist_name(Dist d) {
    switch (d) {
        case Dist::uniform:
            return "uniform";
        case Dist::hot:
            return "hot";
        case Dist::fresh:
            return "new";
    }
    return "?";
}

// The algorithms measured beside the token bucket (the limit of the system "ext"), as rate_limit_define
// names them, and calendar_month (a fixed window of calendar months in Europe/Paris); the system of each
// is "ext_" + its name.
inline constexpr std::array<const char *, 4> OTHER_ALGORITHMS{"gcra", "fixed_window", "sliding_window",
                                                              "calendar_month"};

// One configuration cell: every system in it is measured under the same conditions, in rotating
// order, several rounds, so that drift of a noisy machine hits all of them alike.
struct Cell {
    bool sync_commit = false;
    Dist dist = Dist::uniform;
    int clients = 1;
    Isolation isolation = Isolation::autocommit;
    // A server setting applied for this cell only ("name=value"), empty for the main matrix.
    std::string setting;
    // The batch cell: rate_limit_request_many beside single calls (its own table in the report).
    bool batch = false;
};

// Counted by the workers and the runner over one run.
struct Counters {
    std::uint64_t calls = 0;                   // completed in the measured window
    std::uint64_t denied = 0;                  // completed calls the limiter refused
    std::uint64_t errors = 0;                  // exceptions that reached the caller (the application)
    std::uint64_t retries = 0;                 // transactions run again by the retry helper
    std::uint64_t serialization_failures = 0;  // 40001 seen, retried or not
    std::uint64_t deadlocks = 0;               // 40P01 seen
    std::uint64_t retried_calls = 0;           // calls that needed at least one retry
    std::uint64_t exhausted = 0;               // calls whose retries ran out (they are also errors)

    Counters &operator+=(const Counters &o) {
        calls += o.calls;
        denied += o.denied;
        errors += o.errors;
        retries += o.retries;
        serialization_failures += o.serialization_failures;
        deadlocks += o.deadlocks;
        retried_calls += o.retried_calls;
        exhausted += o.exhausted;
        return *this;
    }
};

// One client: one connection, used by one thread. call() performs one rate-limit request (or the
// reference operation) for key and throws what the application would see.
class Worker {
  public:
    virtual ~Worker() = default;
    virtual void call(const std::string &key, Counters &counters) = 0;
    // After call() threw: make the worker usable again (e.g. a fresh libpqxx transaction object).
    virtual void recover() {}
};

// A measured system: a name for files, a label for people, and a way to open a client.
class System {
  public:
    System(std::string id, std::string label) : id_(std::move(id)), label_(std::move(label)) {}
    virtual ~System() = default;
    const std::string &id() const { return id_; }
    const std::string &label() const { return label_; }
    virtual std::unique_ptr<Worker> connect() = 0;
    // Rate-limit decisions one call makes: 1, or the keys of one batch (rate_limit_request_many), so that
    // the report can give decisions per second beside calls per second.
    virtual int decisions_per_call() const { return 1; }

  private:
    std::string id_;
    std::string label_;
};

// One time-boxed run of one system with N clients.
struct RunResult {
    double seconds = 0;  // length of the measured window
    Counters counters;
    double tps = 0;
    double p50_us = 0, p99_us = 0, p999_us = 0, mean_us = 0, max_us = 0;
    std::string first_error;  // the first error's message, if any
    // Every measured call's latency, kept until the cell's summary pools them across rounds.
    std::vector<std::int64_t> latencies_ns;
};

// Runs every worker on its own thread for warmup + measure seconds; only calls that start inside the
// measured window count, so the warm-up fills caches, plans and connections without being timed.
RunResult run_timed(std::vector<std::unique_ptr<Worker>> &workers, const std::vector<std::string> &keys, Dist dist,
                    double warmup_seconds, double measure_seconds, std::uint64_t seed);

// Nearest-rank percentile (p in [0, 1]) of samples, which it reorders. 0 for no samples.
double percentile(std::vector<std::int64_t> &samples, double p);
// Median of values (the mean of the two middle ones for an even count). 0 for none.
double median(std::vector<double> values);

}  // namespace bench
