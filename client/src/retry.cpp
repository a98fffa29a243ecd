#include <algorithm>
#include <exception>
#include <optional>
#include <pqxx/except>
#include <pqxx/transaction>
#include <string>
#include <thread>

#include "pg_ratelimit/retry.hpp"
#include "pqxx_compat.hpp"
#include "random.hpp"
#include "retry_loop.hpp"

namespace pg_ratelimit {

std::chrono::microseconds backoff_ceiling(const RetryPolicy &policy, int attempt) noexcept {
    const auto cap = policy.max_delay.count();
    auto ceiling = policy.base_delay.count();
    if (ceiling <= 0 || cap <= 0) return std::chrono::microseconds{0};
    for (int i = 1; i < attempt && ceiling < cap; ++i) ceiling = ceiling > cap / 2 ? cap : ceiling * 2;
    return std::chrono::microseconds{std::min(ceiling, cap)};
}

namespace detail {
namespace {

void count(RetryCounters *counters, RetryReason reason) {
    if (counters == nullptr) return;
    switch (reason) {
        case RetryReason::serialization_failure:
            ++counters->serialization_failures;
            break;
        case RetryReason::deadlock:
            ++counters->deadlocks;
            break;
        case RetryReason::connection_lost:
            ++counters->connections_lost;
            break;
    }
}

struct Failure {
    RetryReason reason;
    std::string what;
    std::exception_ptr error;
};

// Runs attempt once. Returns nothing on success, the failure if it is one to retry; every other
// exception propagates.
std::optional<Failure> run_once(const std::function<void()> &attempt) {
    try {
        attempt();
        return std::nullopt;
    } catch (const pqxx::in_doubt_error &) {
        throw;  // COMMIT may have happened: running the transaction again could apply it twice
    } catch (const pqxx::serialization_failure &error) {
        return Failure{RetryReason::serialization_failure, error.what(), std::current_exception()};
    } catch (const pqxx::deadlock_detected &error) {
        return Failure{RetryReason::deadlock, error.what(), std::current_exception()};
    } catch (const pqxx::broken_connection &error) {
        // Not in doubt: libpqxx reports a connection lost during COMMIT as in_doubt_error, so this one
        // broke before COMMIT was sent, and the server rolls such a transaction back.
        return Failure{RetryReason::connection_lost, error.what(), std::current_exception()};
    }
}

}  // namespace

const char *isolation_sql(isolation level) noexcept {
    switch (level) {
        case isolation::repeatable_read:
            return "REPEATABLE READ";
        case isolation::serializable:
            return "SERIALIZABLE";
        case isolation::read_committed:
            break;
    }
    return "READ COMMITTED";
}

void retry_loop(const RetryPolicy &policy, RetryCounters *counters, const std::function<void()> &attempt,
                const std::function<void()> &on_connection_lost) {
    using Clock = std::chrono::steady_clock;
    const Clock::time_point start = Clock::now();
    for (int number = 1;; ++number) {
        const std::optional<Failure> failure = run_once(attempt);
        if (!failure) return;
        count(counters, failure->reason);
        if (failure->reason == RetryReason::connection_lost && on_connection_lost) on_connection_lost();

        const std::chrono::microseconds delay = uniform_up_to(backoff_ceiling(policy, number));
        if (number >= policy.max_attempts || (Clock::now() - start) + delay > policy.max_elapsed) {
            if (counters != nullptr) ++counters->exhausted;
            std::rethrow_exception(failure->error);
        }
        if (counters != nullptr) ++counters->retries;
        if (policy.on_retry) policy.on_retry(RetryEvent{number, failure->reason, delay, failure->what});
        std::this_thread::sleep_for(delay);
    }
}

void run_transaction(RetryConnection &conn, isolation level, const RetryPolicy &policy,
                     const std::function<void(pqxx::work &)> &body) {
    // SET TRANSACTION rather than transaction<isolation_level>: the callback then always receives a
    // pqxx::work, whatever the level, and a session whose default level differs is still overridden.
    const std::string set_level = std::string("SET TRANSACTION ISOLATION LEVEL ") + isolation_sql(level);
    // After a lost connection, the next attempt begins on a reopened one (compat::Reopener: the same
    // session object reactivated by libpqxx 6.4, a new pqxx::connection with 7 and 8). A failure to reopen
    // it is the attempt's broken_connection, retried like any other.
    compat::Reopener reopener{conn};
    retry_loop(
        policy, nullptr,
        [&] {
            reopener.reopen();
            pqxx::work tx{conn};  // destroyed without commit() = rolled back
            compat::exec0(tx, set_level);
            body(tx);
            tx.commit();
        },
        [&reopener] { reopener.lost(); });
}

}  // namespace detail
}  // namespace pg_ratelimit
