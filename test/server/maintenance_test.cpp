// Maintenance under load. Clients call rate_limit_request at READ COMMITTED, REPEATABLE READ and
// SERIALIZABLE (each call its own transaction, run by the client library's run_transaction, which retries
// 40001 and 40P01) while two more connections run, over and over, what a DBA or a periodic job does to the
// extension: VACUUM FULL, CLUSTER, REINDEX (CONCURRENTLY, of each index and of the table, and plain),
// VACUUM, ANALYZE, dropping and re-creating the lookup index, rate_limit_cleanup (all limits and single
// ones), redefinitions with unchanged values, capacity changes, and drops and re-definitions of a limit.
//
// The defects this guards against: "could not open relation with OID" (XX000) and a spurious "could not
// settle concurrent updates of a rate limit key" (40001) after REINDEX CONCURRENTLY, and cleanup failing
// with 42704 when a limit is dropped while it runs. What must hold:
// - no XX000 and no other unexpected error; 42704 only on the limit being dropped and re-defined;
// - 40001 only at REPEATABLE READ and SERIALIZABLE, and only "could not serialize access ..." (the ordinary
//   conflict of two transactions), or at any level the commit's check that a limit changed meanwhile (mt_cap
//   and mt_flap only: the limits redefined to the same values never fail it); no deadlock;
// - exact limits (periods of 1000 days: no refill worth a unit during the test; redefined only to the same
//   values; their rows are never full, so cleanup never deletes them): every key admitted exactly
//   min(attempts, allowance), and the server's `remaining` for it agrees at the end; the one split over
//   hot-key shards (mt_fw) at most that (a request is decided by one shard, which a concurrent one may
//   have drained), its `remaining` agreeing all the same;
// - the limit whose capacity goes between 40 and 20 (cleanup of all limits only ever runs while it is at
//   40, when none of its rows is full): every key admitted between min(attempts, 20) and 40;
// - the fast limit whose rows cleanup keeps deleting under the requests: no key admitted more than
//   capacity + rate x the time between its first request and its last;
// - the limit that is dropped (which resets its keys) and re-defined: requests that ran entirely between
//   two drops admitted at most its allowance per key;
// - every maintenance statement succeeds.
#include <gtest/gtest.h>

#include <pg_ratelimit/retry.hpp>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <map>
#include <memory>
#include <mutex>
#include <pqxx/pqxx>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "pqxx_compat.hpp"

namespace compat = pg_ratelimit::compat;

namespace {

using Clock = std::chrono::steady_clock;
using Level = pg_ratelimit::isolation;

// Bounded: the whole test (setup, load, checks) takes under a minute on two cores.
constexpr std::chrono::seconds kDuration{40};
constexpr int kClients = 6;
// Hot keys change every epoch, so that new keys race into existence and run out all along the test.
constexpr std::chrono::milliseconds kEpoch{2000};
constexpr int kHotKeys = 3;
constexpr int kColdKeys = 4000;
constexpr int kWarmKeys = 10;
// Rows of a limit nobody requests during the test: they make every rewrite and rebuild of the table take
// long enough to overlap many requests.
constexpr int kFillerRows = 20000;
constexpr std::size_t kMaxReported = 25;

// Allowances per key. A period of 1000 days refills 60 x 60 s / 86,400,000 s = 4e-5 units per minute.
constexpr int kExact = 60;  // mt_tb (token bucket) and mt_fw (fixed window, over 4 shards)
constexpr int kCold = 2;    // mt_cold
constexpr int kCapHigh = 40;
constexpr int kCapLow = 20;    // mt_cap: rate 20, capacity 40 or 20
constexpr int kFlap = 5;       // mt_flap, dropped and re-defined
constexpr int kFastRate = 20;  // mt_fast: 20 per second, capacity 20

enum class Limit { tb, fw, cold, cap, fast, flap };

struct LimitChoice {
    Limit limit;
    const char *name;
    int weight;  // share of the requests, in percent
};
constexpr std::array<LimitChoice, 6> kLimits{{{Limit::tb, "mt_tb", 25},
                                              {Limit::fw, "mt_fw", 20},
                                              {Limit::cold, "mt_cold", 20},
                                              {Limit::cap, "mt_cap", 15},
                                              {Limit::fast, "mt_fast", 10},
                                              {Limit::flap, "mt_flap", 10}}};

constexpr std::array<Level, 3> kLevels{Level::read_committed, Level::repeatable_read, Level::serializable};
constexpr std::array<const char *, 3> kLevelNames{"read_committed", "repeatable_read", "serializable"};

std::size_t level_index(Level level) {
    switch (level) {
        case Level::read_committed:
            return 0;
        case Level::repeatable_read:
            return 1;
        case Level::serializable:
            return 2;
    }
    return 0;
}

// The statements that define each limit. Redefinitions run exactly these, so no allowance ever changes
// (except mt_cap's, on purpose).
struct Definitions {
    std::string tb;
    std::string fw;
    std::string cold;
    std::string cap_high;
    std::string cap_low;
    std::string fast;
    std::string flap;
    std::string filler;

    // The fixed window's grid is anchored a day ago, so no window boundary falls inside the test.
    explicit Definitions(const std::string &quoted_start)
        : tb("SELECT rate_limit_define('mt_tb', rate => 60, period => '1000 days')"),
          fw("SELECT rate_limit_define('mt_fw', rate => 60, period => '1000 days', algorithm => 'fixed_window', "
             "shards => 4, start => " +
             quoted_start + ")"),
          cold("SELECT rate_limit_define('mt_cold', rate => 2, period => '1000 days')"),
          // as_is: the bounds below count units a key keeps across the flips (proportional rescaling, the
          // default, would strand a fraction of a unit at each halving: sql/rescale.sql covers it).
          cap_high(
              "SELECT rate_limit_define('mt_cap', rate => 20, period => '1000 days', capacity => 40,"
              " rescale => 'as_is')"),
          cap_low(
              "SELECT rate_limit_define('mt_cap', rate => 20, period => '1000 days', capacity => 20,"
              " rescale => 'as_is')"),
          fast("SELECT rate_limit_define('mt_fast', rate => 20, period => '1 second')"),
          flap("SELECT rate_limit_define('mt_flap', rate => 5, period => '1000 days')"),
          filler("SELECT rate_limit_define('mt_filler', rate => 1, period => '1000 days')") {}
};

// Failures seen by any thread, reported by the main thread: the first few in full, and all of them
// counted by kind (see kind_of).
class Problems {
  public:
    void add(const std::string &what) {
        const std::lock_guard<std::mutex> lock(mutex_);
        ++count_;
        if (messages_.size() < kMaxReported) messages_.push_back(what);
        ++kinds_[kind_of(what)];
    }
    std::string kinds() const {
        const std::lock_guard<std::mutex> lock(mutex_);
        std::string all;
        for (const auto &[kind, count] : kinds_) all += "  " + std::to_string(count) + " x " + kind + "\n";
        return all;
    }
    long count() const {
        const std::lock_guard<std::mutex> lock(mutex_);
        return count_;
    }
    std::string report() const {
        const std::lock_guard<std::mutex> lock(mutex_);
        std::string all;
        for (const std::string &message : messages_) all += "  " + message + "\n";
        return all;
    }

  private:
    // "request mt_tb/e3h1 at serializable: XX000: ERROR:  could not open relation with OID 16437" ->
    // "request at serializable: XX000: ERROR:  could not open relation with OID #": without the limit and
    // key, numbers in the message blurred, cut at the DETAIL or the 100th character of the message.
    static std::string kind_of(const std::string &what) {
        std::string kind = what;
        const std::size_t at = kind.find(" at ");
        if (kind.rfind("request ", 0) == 0 && at != std::string::npos) kind.erase(7, at - 7);
        const std::size_t message = kind.find("ERROR:");
        if (message == std::string::npos) return kind;
        std::string blurred = kind.substr(0, message);
        for (std::size_t i = message; i < kind.size() && i < message + 100; ++i) {
            if (kind.compare(i, 7, "DETAIL:") == 0) break;
            const char c = kind[i];
            if (c >= '0' && c <= '9') {
                if (blurred.back() != '#') blurred += '#';
            } else {
                blurred += c;
            }
        }
        return blurred;
    }

    mutable std::mutex mutex_;
    long count_ = 0;
    std::vector<std::string> messages_;
    std::map<std::string, long> kinds_;
};

// Shared by the clients and the maintenance connections.
struct LoadRun {
    Clock::time_point start;
    Clock::time_point deadline;
    Problems problems;
    // Drops of mt_flap begun and committed: a request that saw `done` = n before it began and `started` = n
    // after it committed ran entirely within the n-th definition's lifetime.
    std::atomic<long> flap_drops_started{0};
    std::atomic<long> flap_drops_done{0};
    std::atomic<long> cleaned_rows{0};  // rows rate_limit_cleanup deleted
};

struct Tally {
    long attempts = 0;  // requests that committed
    long admitted = 0;
    // When the first of them began and the last committed, in seconds from the start: the span over which
    // the key could refill.
    double first_began = 1e9;
    double last_ended = -1e9;
};
using Tallies = std::map<std::string, Tally>;  // "limit/key"; mt_flap: "mt_flap/g<generation>/key"

struct ClientStats {
    std::array<long, 3> committed{};    // per level
    std::array<long, 3> serialize{};    // 40001 "could not serialize access ..." (expected at RR/SER)
    std::array<long, 3> changed{};      // 40001 at COMMIT: mt_cap or mt_flap changed meanwhile (expected)
    std::array<long, 3> settle{};       // 40001 "could not settle concurrent updates ..." (spurious)
    std::array<long, 3> other_40001{};  // any other 40001 (spurious; at READ COMMITTED every 40001)
    std::array<long, 3> deadlocks{};    // 40P01
    std::array<long, 3> exhausted{};    // gave up after retrying
    long flap_undefined = 0;            // 42704 on mt_flap (expected between a drop and its re-definition)
    long flap_overlapping = 0;          // mt_flap requests that a drop overlapped (not checked)
    long xx000 = 0;
    long other_errors = 0;
    Tallies tallies;

    void merge(const ClientStats &other) {
        for (std::size_t i = 0; i < 3; ++i) {
            committed[i] += other.committed[i];
            serialize[i] += other.serialize[i];
            changed[i] += other.changed[i];
            settle[i] += other.settle[i];
            other_40001[i] += other.other_40001[i];
            deadlocks[i] += other.deadlocks[i];
            exhausted[i] += other.exhausted[i];
        }
        flap_undefined += other.flap_undefined;
        flap_overlapping += other.flap_overlapping;
        xx000 += other.xx000;
        other_errors += other.other_errors;
        for (const auto &[key, tally] : other.tallies) {
            Tally &sum = tallies[key];
            sum.attempts += tally.attempts;
            sum.admitted += tally.admitted;
            sum.first_began = std::min(sum.first_began, tally.first_began);
            sum.last_ended = std::max(sum.last_ended, tally.last_ended);
        }
    }
};

bool contains(const std::string &text, const char *part) { return text.find(part) != std::string::npos; }

std::string one_line(std::string text) {
    for (char &c : text)
        if (c == '\n') c = ' ';
    return text;
}

// One client connection: requests until the deadline, at the three levels in turn.
class Client {
  public:
    Client(const Client &) = delete;
    Client &operator=(const Client &) = delete;
    Client(int index, LoadRun &run) : index_(index), run_(run), random_(static_cast<unsigned>(index) * 7919U + 17U) {
        policy_.max_attempts = 1000;
        policy_.max_elapsed = std::chrono::seconds(30);
        policy_.base_delay = std::chrono::microseconds(200);
        policy_.max_delay = std::chrono::microseconds(20000);
        policy_.on_retry = [this](const pg_ratelimit::RetryEvent &event) { on_retry(event); };
    }

    void run() {
        try {
            pqxx::connection conn{""};
            for (long n = 0; Clock::now() < run_.deadline; ++n) {
                level_ = kLevels[static_cast<std::size_t>(n + index_) % kLevels.size()];
                const LimitChoice &choice = pick_limit();
                request(conn, choice, pick_key(choice.limit));
            }
        } catch (const std::exception &e) {
            // The connection is gone or in an unknown state: this client stops.
            run_.problems.add("client " + std::to_string(index_) + " stopped: " + one_line(e.what()));
        }
    }

    const ClientStats &stats() const { return stats_; }

  private:
    const LimitChoice &pick_limit() {
        const int roll = std::uniform_int_distribution<int>(0, 99)(random_);
        int sum = 0;
        for (const LimitChoice &choice : kLimits) {
            sum += choice.weight;
            if (roll < sum) return choice;
        }
        return kLimits.back();
    }

    std::string pick_key(Limit limit) {
        if (limit == Limit::cold)
            return "c" + std::to_string(std::uniform_int_distribution<int>(0, kColdKeys - 1)(random_));
        // Half of mt_fast's requests go to a few keys that each see a request every 100 ms or so and refill
        // in 50 ms: they are full most of the time, so cleanup deletes their rows while requests update them.
        if (limit == Limit::fast && std::uniform_int_distribution<int>(0, 1)(random_) == 0)
            return "w" + std::to_string(std::uniform_int_distribution<int>(0, kWarmKeys - 1)(random_));
        const long epoch = static_cast<long>((Clock::now() - run_.start) / kEpoch);
        return "e" + std::to_string(epoch) + "h" +
               std::to_string(std::uniform_int_distribution<int>(0, kHotKeys - 1)(random_));
    }

    void request(pqxx::connection &conn, const LimitChoice &choice, const std::string &key) {
        const long drops_done_before = run_.flap_drops_done.load();
        const double began = seconds_since_start();
        current_ = std::string(choice.name) + "/" + key;
        bool allowed = false;
        try {
            allowed = pg_ratelimit::run_transaction(
                conn, level_,
                [&](pqxx::work &tx) {
                    return compat::exec_params1(tx, "SELECT allowed FROM rate_limit_request($1, $2)", key,
                                                choice.name)[0]
                        .as<bool>();
                },
                policy_);
        } catch (const pqxx::transaction_rollback &e) {  // 40001 or 40P01 after the last retry
            ++stats_.exhausted[level_index(level_)];
            problem("gave up retrying: " + one_line(e.what()));
            return;
        } catch (const pqxx::sql_error &e) {  // (libpqxx 7 and 8: a transaction_rollback is an sql_error)
            on_error(choice.limit, compat::sqlstate(e), e.what());
            return;
        }
        ++stats_.committed[level_index(level_)];
        std::string tally_key = current_;
        if (choice.limit == Limit::flap) {
            if (run_.flap_drops_started.load() != drops_done_before) {
                ++stats_.flap_overlapping;
                return;
            }
            tally_key = "mt_flap/g" + std::to_string(drops_done_before) + "/" + key;
        }
        Tally &tally = stats_.tallies[tally_key];
        ++tally.attempts;
        if (allowed) ++tally.admitted;
        tally.first_began = std::min(tally.first_began, began);
        tally.last_ended = std::max(tally.last_ended, seconds_since_start());
    }

    double seconds_since_start() const { return std::chrono::duration<double>(Clock::now() - run_.start).count(); }

    // Every retried failure passes here (the library calls it before retrying).
    void on_retry(const pg_ratelimit::RetryEvent &event) {
        const std::size_t level = level_index(level_);
        switch (event.reason) {
            case pg_ratelimit::RetryReason::serialization_failure:
                if (contains(event.what, "could not settle concurrent updates")) {
                    ++stats_.settle[level];
                    problem("spurious 40001: " + one_line(event.what));
                } else if (contains(event.what, "while this transaction decided its keys") &&
                           (contains(event.what, "\"mt_cap\"") || contains(event.what, "\"mt_flap\""))) {
                    // The commit check: a capacity change or a drop of the limit committed first (at every
                    // level). The limits only ever redefined to the same values never cause one.
                    ++stats_.changed[level];
                } else if (level_ != Level::read_committed && contains(event.what, "could not serialize access")) {
                    ++stats_.serialize[level];
                } else {
                    ++stats_.other_40001[level];
                    problem("unexpected 40001: " + one_line(event.what));
                }
                break;
            case pg_ratelimit::RetryReason::deadlock:
                ++stats_.deadlocks[level];
                problem("deadlock (40P01): " + one_line(event.what));
                break;
            case pg_ratelimit::RetryReason::connection_lost:
                problem("connection lost: " + one_line(event.what));
                break;
        }
    }

    void on_error(Limit limit, const std::string &sqlstate, const std::string &what) {
        if (sqlstate == "42704" && limit == Limit::flap) {
            ++stats_.flap_undefined;
            return;
        }
        if (sqlstate == "XX000")
            ++stats_.xx000;
        else
            ++stats_.other_errors;
        problem(sqlstate + ": " + one_line(what));
    }

    void problem(const std::string &what) {
        run_.problems.add(std::string("request ") + current_ + " at " + kLevelNames[level_index(level_)] + ": " + what);
    }

    int index_;
    LoadRun &run_;
    std::mt19937 random_;
    pg_ratelimit::RetryPolicy policy_;
    Level level_ = Level::read_committed;
    std::string current_;
    ClientStats stats_;
};

// What the maintenance connections ran: statements per operation.
class Operations {
  public:
    void count(const std::string &operation) {
        const std::lock_guard<std::mutex> lock(mutex_);
        ++runs_[operation];
    }
    std::map<std::string, long> runs() const {
        const std::lock_guard<std::mutex> lock(mutex_);
        return runs_;
    }

  private:
    mutable std::mutex mutex_;
    std::map<std::string, long> runs_;
};

// Runs statements in one transaction (several) or in autocommit (one: VACUUM, CLUSTER and the
// CONCURRENTLY forms cannot run in a transaction block). Returns the SQLSTATE of a failure, "" on success.
// `result`, if given, receives the last statement's result.
std::string execute(pqxx::connection &conn, const std::vector<std::string> &statements, std::string *message,
                    pqxx::result *result = nullptr) {
    try {
        if (statements.size() == 1) {
            pqxx::nontransaction tx{conn};
            const pqxx::result rows = tx.exec(statements.front());
            if (result != nullptr) *result = rows;
        } else {
            pqxx::work tx{conn};
            for (const std::string &statement : statements) tx.exec(statement);
            tx.commit();
        }
        return "";
    } catch (const pqxx::transaction_rollback &e) {  // libpqxx 6 throws 40001 and 40P01 as these, not as
        *message = one_line(e.what());               // sql_errors (7 and 8: sql_errors too, caught here first)
        return "40001/40P01";
    } catch (const pqxx::sql_error &e) {
        *message = one_line(e.what());
        const std::string sqlstate = compat::sqlstate(e);
        return sqlstate.empty() ? "?" : sqlstate;
    }
}

std::string maintenance_failure(const char *operation, const std::string &sqlstate, const std::string &message) {
    std::string what = "maintenance ";
    what += operation;
    what += ": ";
    what += sqlstate;
    what += ": ";
    what += message;
    return what;
}

struct Step {
    const char *operation;
    std::vector<std::string> statements;  // each its own autocommit statement
    const char *tolerated;                // an SQLSTATE this step may fail with, or nullptr
    bool cleanup = false;                 // returns how many rows it deleted
};

void run_step(pqxx::connection &conn, const Step &step, LoadRun &run, Operations &operations) {
    for (const std::string &statement : step.statements) {
        std::string message;
        pqxx::result result;
        const std::string sqlstate = execute(conn, {statement}, &message, &result);
        if (sqlstate.empty()) {
            if (step.cleanup) run.cleaned_rows += result[0][0].as<long>();
            continue;
        }
        if (step.tolerated != nullptr && sqlstate == step.tolerated) {
            operations.count(std::string(step.operation) + " (" + sqlstate + ")");
            return;
        }
        run.problems.add(maintenance_failure(step.operation, sqlstate, message));
        return;
    }
    operations.count(step.operation);
}

// The table's maintenance, in a loop: rewrites, rebuilds, cleanup, and mt_cap's capacity changes (here,
// so that cleanup of all limits only ever runs while mt_cap is at its high capacity).
void table_maintenance(LoadRun &run, Operations &operations, const Definitions &definitions) {
    const std::vector<Step> steps{
        {"capacity lowered", {definitions.cap_low}, nullptr},
        {"VACUUM FULL", {"VACUUM FULL rate_limit_state"}, nullptr},
        // Cleanup of the limit being dropped and re-defined fails with 42704 while it is undefined.
        {"cleanup(mt_flap)", {"SELECT rate_limit_cleanup('mt_flap')"}, "42704", true},
        {"CLUSTER", {"CLUSTER rate_limit_state USING rate_limit_state_pkey"}, nullptr},
        {"REINDEX INDEX CONCURRENTLY lookup", {"REINDEX INDEX CONCURRENTLY rate_limit_state_lookup"}, nullptr},
        {"cleanup(mt_fast)", {"SELECT rate_limit_cleanup('mt_fast')"}, nullptr, true},
        {"REINDEX INDEX CONCURRENTLY pkey", {"REINDEX INDEX CONCURRENTLY rate_limit_state_pkey"}, nullptr},
        {"REINDEX TABLE CONCURRENTLY", {"REINDEX TABLE CONCURRENTLY rate_limit_state"}, nullptr},
        {"REINDEX TABLE", {"REINDEX TABLE rate_limit_state"}, nullptr},
        {"VACUUM", {"VACUUM rate_limit_state"}, nullptr},
        {"ANALYZE", {"ANALYZE rate_limit_state"}, nullptr},
        {"lookup index dropped and re-created",
         {"DROP INDEX CONCURRENTLY rate_limit_state_lookup",
          "CREATE INDEX CONCURRENTLY rate_limit_state_lookup ON rate_limit_state USING hash ((limit_name || key))"},
         nullptr},
        {"capacity raised", {definitions.cap_high}, nullptr},
        {"cleanup()", {"SELECT rate_limit_cleanup()"}, nullptr, true},
    };
    try {
        pqxx::connection conn{""};
        while (Clock::now() < run.deadline) {
            for (const Step &step : steps) {
                if (Clock::now() >= run.deadline) break;
                run_step(conn, step, run, operations);
            }
        }
    } catch (const std::exception &e) {
        run.problems.add(std::string("table maintenance stopped: ") + one_line(e.what()));
    }
}

// The definitions, in a loop: mt_flap dropped (resetting its keys) and re-defined, alone and within one
// transaction, and the other limits redefined with their own values, alone and together.
void definition_changes(LoadRun &run, Operations &operations, const Definitions &definitions) {
    const auto drop_flap = [&](pqxx::connection &conn, const std::vector<std::string> &statements,
                               const char *operation) {
        ++run.flap_drops_started;
        std::string message;
        const std::string sqlstate = execute(conn, statements, &message);
        ++run.flap_drops_done;
        if (sqlstate.empty())
            operations.count(operation);
        else
            run.problems.add(maintenance_failure(operation, sqlstate, message));
    };
    const auto define = [&](pqxx::connection &conn, const std::vector<std::string> &statements, const char *operation) {
        std::string message;
        const std::string sqlstate = execute(conn, statements, &message);
        if (sqlstate.empty())
            operations.count(operation);
        else
            run.problems.add(maintenance_failure(operation, sqlstate, message));
    };
    // Not in name order on purpose: an application redefining several limits in one transaction need not
    // sort them, and rate_limit_cleanup() takes the limits' locks in name order at the same time.
    const std::vector<std::string> same_values{definitions.tb, definitions.fw, definitions.cold, definitions.fast};
    try {
        pqxx::connection conn{""};
        for (long i = 0; Clock::now() < run.deadline; ++i) {
            if (i % 3 == 2) {
                drop_flap(conn, {"SELECT rate_limit_drop('mt_flap')", definitions.flap}, "drop+define mt_flap (1 tx)");
            } else {
                drop_flap(conn, {"SELECT rate_limit_drop('mt_flap')"}, "drop mt_flap");
                std::this_thread::sleep_for(std::chrono::milliseconds(30));  // requests meet 42704 meanwhile
                define(conn, {definitions.flap}, "define mt_flap");
            }
            if (i % 2 == 0) {
                define(conn, same_values, "redefine 4 limits, same values (1 tx)");
            } else {
                for (const std::string &statement : same_values) define(conn, {statement}, "redefine, same values");
            }
            std::this_thread::sleep_for(std::chrono::milliseconds(100));
        }
    } catch (const std::exception &e) {
        run.problems.add(std::string("definition changes stopped: ") + one_line(e.what()));
    }
}

// Removes what the test leaves behind, including after an earlier run that failed half-way.
void remove_test_limits(pqxx::connection &conn) {
    pqxx::work tx{conn};
    tx.exec("SELECT rate_limit_drop(name) FROM rate_limit_config WHERE name LIKE 'mt\\_%'");
    tx.exec("DELETE FROM rate_limit_state WHERE limit_name LIKE 'mt\\_%'");
    tx.commit();
}

// The lookup index as the extension made it, valid.
bool lookup_index_in_place(pqxx::connection &conn) {
    pqxx::work tx{conn};
    return compat::exec1(tx,
                         "SELECT count(*) FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid"
                         " WHERE c.relname = 'rate_limit_state_lookup' AND i.indisvalid AND i.indisready")[0]
               .as<int>() == 1;
}

std::string prefix_of(const std::string &tally_key) { return tally_key.substr(0, tally_key.find('/')); }

TEST(MaintenanceUnderLoad, AdmitsWithinAllowancesWithoutSpuriousErrors) {
    pqxx::connection admin{""};
    std::string start;
    {
        pqxx::work tx{admin};
        tx.exec("CREATE EXTENSION IF NOT EXISTS pg_ratelimit");
        start = compat::exec1(tx, "SELECT (now() - interval '1 day')::text")[0].as<std::string>();
        tx.commit();
    }
    remove_test_limits(admin);
    ASSERT_TRUE(lookup_index_in_place(admin)) << "rate_limit_state_lookup is missing or invalid before the test";
    const Definitions definitions{admin.quote(start)};
    {
        pqxx::work tx{admin};
        for (const std::string *statement : {&definitions.tb, &definitions.fw, &definitions.cold, &definitions.cap_high,
                                             &definitions.fast, &definitions.flap, &definitions.filler})
            tx.exec(*statement);
        const long filled =
            compat::exec_params1(tx,
                                 "SELECT count(*) FILTER (WHERE (rate_limit_request('f' || g, 'mt_filler')).allowed)"
                                 " FROM generate_series(1, $1) AS g",
                                 kFillerRows)[0]
                .as<long>();
        ASSERT_EQ(filled, kFillerRows);
        tx.commit();
    }

    LoadRun run;
    run.start = Clock::now();
    run.deadline = run.start + kDuration;
    Operations operations;
    std::vector<std::unique_ptr<Client>> clients;  // not moved: their retry policies point at them
    clients.reserve(kClients);
    for (int i = 0; i < kClients; ++i) clients.push_back(std::make_unique<Client>(i, run));
    std::vector<std::thread> threads;
    threads.reserve(kClients + 2);
    for (const auto &client : clients) threads.emplace_back([&client] { client->run(); });
    threads.emplace_back([&] { table_maintenance(run, operations, definitions); });
    threads.emplace_back([&] { definition_changes(run, operations, definitions); });
    for (std::thread &thread : threads) thread.join();
    const double elapsed = std::chrono::duration<double>(Clock::now() - run.start).count();

    ClientStats all;
    for (const auto &client : clients) all.merge(client->stats());

    // The allowance checks, per (limit, key).
    long exact_keys = 0, exact_exhausted = 0, exact_admitted = 0, exact_allowed_total = 0, wrong_keys = 0;
    long sharded_shortfall = 0;  // mt_fw: units denied while the key's shards together still held them
    long cap_keys = 0, cap_admitted = 0, fast_keys = 0, fast_admitted = 0, flap_keys = 0, flap_admitted = 0;
    double fast_worst = 0;                                    // the highest share of its bound a mt_fast key admitted
    std::vector<std::pair<std::string, long>> expected_left;  // exact keys: allowance - admitted
    for (const auto &[key, tally] : all.tallies) {
        const std::string limit = prefix_of(key);
        if (limit == "mt_tb" || limit == "mt_fw" || limit == "mt_cold") {
            const long allowance = limit == "mt_cold" ? kCold : kExact;
            const long expected = std::min(tally.attempts, allowance);
            ++exact_keys;
            exact_admitted += tally.admitted;
            exact_allowed_total += expected;
            if (tally.attempts >= allowance) ++exact_exhausted;
            const bool sharded = limit == "mt_fw";
            if (sharded) sharded_shortfall += expected - tally.admitted;
            if ((sharded ? tally.admitted > expected : tally.admitted != expected) && ++wrong_keys <= 10)
                ADD_FAILURE() << key << ": admitted " << tally.admitted << " of " << tally.attempts
                              << " requests, allowance " << allowance << " (must be "
                              << (sharded ? "at most " : "exactly ") << expected << ")";
            expected_left.emplace_back(key, allowance - tally.admitted);
        } else if (limit == "mt_cap") {
            ++cap_keys;
            cap_admitted += tally.admitted;
            EXPECT_LE(tally.admitted, kCapHigh) << key;
            EXPECT_GE(tally.admitted, std::min<long>(tally.attempts, kCapLow)) << key;
        } else if (limit == "mt_fast") {
            // The server's clock runs within [first_began, last_ended] for every request of the key: a
            // quarter of a second more covers the difference between the two clocks' readings.
            const double bound = kFastRate + kFastRate * (tally.last_ended - tally.first_began + 0.25);
            ++fast_keys;
            fast_admitted += tally.admitted;
            fast_worst = std::max(fast_worst, tally.admitted / bound);
            EXPECT_LE(tally.admitted, bound) << key << " over " << tally.last_ended - tally.first_began << " s";
        } else if (limit == "mt_flap") {
            ++flap_keys;
            flap_admitted += tally.admitted;
            EXPECT_LE(tally.admitted, kFlap) << key << " (requests within one definition's lifetime)";
        } else {
            ADD_FAILURE() << "unexpected tally " << key;
        }
    }
    EXPECT_EQ(wrong_keys, 0);

    // The server's state agrees with what was admitted: nothing lost by a rewrite or a rebuild. A check
    // answers as if it consumed one unit: allowed while a unit is left, remaining counted after that unit.
    long state_mismatches = 0;
    {
        pqxx::work tx{admin};
        for (const auto &[key, left] : expected_left) {
            const std::size_t slash = key.find('/');
            const pqxx::row check = compat::exec_params1(tx, "SELECT allowed, remaining FROM rate_limit_check($1, $2)",
                                                         key.substr(slash + 1), key.substr(0, slash));
            const bool allowed = check[0].as<bool>();
            const long remaining = check[1].as<long>();
            if ((allowed != (left >= 1) || remaining != std::max(left - 1, 0L)) && ++state_mismatches <= 10)
                ADD_FAILURE() << key << ": the server's check says allowed " << allowed << ", remaining " << remaining
                              << "; " << left << " units must be left after the admissions";
        }
    }
    EXPECT_EQ(state_mismatches, 0);

    const std::map<std::string, long> runs = operations.runs();
    std::printf("[ info ] maintenance under load, %.1f s, %d clients:\n", elapsed, kClients);
    for (std::size_t i = 0; i < kLevels.size(); ++i)
        std::printf(
            "[ info ]   %-15s %6ld requests committed; 40001 retried: %ld 'could not serialize' (expected "
            "at RR/SER), %ld limit changed meanwhile (expected), %ld 'could not settle', %ld other; 40P01 %ld; "
            "gave up %ld\n",
            kLevelNames[i], all.committed[i], all.serialize[i], all.changed[i], all.settle[i], all.other_40001[i],
            all.deadlocks[i], all.exhausted[i]);
    std::printf(
        "[ info ]   exact limits: %ld keys (%ld exhausted), admitted %ld of expected %ld (sharded shortfall %ld); "
        "mt_cap: %ld keys, "
        "%ld admitted; mt_fast: %ld keys, %ld admitted (at most %.0f%% of a key's bound); mt_flap: %ld clean "
        "(generation, "
        "key) pairs, %ld admitted, %ld requests overlapped a drop, %ld x 42704\n",
        exact_keys, exact_exhausted, exact_admitted, exact_allowed_total, sharded_shortfall, cap_keys, cap_admitted,
        fast_keys, fast_admitted, 100 * fast_worst, flap_keys, flap_admitted, all.flap_overlapping, all.flap_undefined);
    std::printf("[ info ]   XX000: %ld, other errors: %ld, problems: %ld\n", all.xx000, all.other_errors,
                run.problems.count());
    std::string ops;
    for (const auto &[operation, count] : runs) ops += " " + operation + " x" + std::to_string(count) + ";";
    std::printf("[ info ]   maintenance:%s cleanup deleted %ld rows\n", ops.c_str(), run.cleaned_rows.load());

    EXPECT_EQ(run.problems.count(), 0) << "problems by kind:\n"
                                       << run.problems.kinds() << "first problems:\n"
                                       << run.problems.report();
    EXPECT_EQ(all.xx000, 0);
    // The test did what it claims: every level ran, keys ran out, every maintenance operation ran.
    for (std::size_t i = 0; i < kLevels.size(); ++i) EXPECT_GT(all.committed[i], 0) << kLevelNames[i];
    EXPECT_GT(exact_exhausted, 0);
    EXPECT_GT(flap_keys, 0);
    for (const char *operation :
         {"VACUUM FULL", "CLUSTER", "REINDEX INDEX CONCURRENTLY lookup", "REINDEX INDEX CONCURRENTLY pkey",
          "REINDEX TABLE CONCURRENTLY", "REINDEX TABLE", "VACUUM", "ANALYZE", "lookup index dropped and re-created",
          "capacity lowered", "capacity raised", "cleanup()", "cleanup(mt_fast)", "drop mt_flap", "define mt_flap",
          "drop+define mt_flap (1 tx)"})
        EXPECT_GT(runs.count(operation) == 1 ? runs.at(operation) : 0, 0) << operation;

    EXPECT_TRUE(lookup_index_in_place(admin)) << "the lookup index must be back in place";
    remove_test_limits(admin);
}

}  // namespace
