// Retrying whole transactions on serialization failures (40001), deadlocks (40P01) and lost connections.
//
// Under SERIALIZABLE or REPEATABLE READ (and on YugabyteDB at any level) PostgreSQL aborts one of two
// transactions that update the same rate-limit key at once. The only correct response is to run the
// whole transaction again from the start, with a fresh snapshot: retrying a single statement inside
// the aborted transaction can never succeed, and skipping the failed work would lose writes.
#pragma once

#include <chrono>
#include <functional>
#include <optional>
#include <pqxx/connection>
#include <pqxx/transaction>
#include <pqxx/version>
#include <string>
#include <type_traits>
#include <utility>

namespace pg_ratelimit {

enum class isolation { read_committed, repeatable_read, serializable };

// Why an attempt is being retried.
enum class RetryReason {
    serialization_failure,  // SQLSTATE 40001 (pqxx::serialization_failure)
    deadlock,               // SQLSTATE 40P01 (pqxx::deadlock_detected)
    connection_lost,        // pqxx::broken_connection before the transaction committed; reconnected first
};

// Passed to RetryPolicy::on_retry before each retry's back-off sleep.
struct RetryEvent {
    int attempt = 0;  // the attempt that just failed, from 1
    RetryReason reason = RetryReason::serialization_failure;
    std::chrono::microseconds delay{0};  // the back-off about to be slept
    std::string what{};                  // the failure's message, for logs only
};

// How often and how long to retry. Attempt n (from 1) that fails is followed by a sleep drawn
// uniformly from [0, min(max_delay, base_delay * 2^(n-1))] ("full jitter": contending clients spread
// out instead of colliding again in lockstep). The loop gives up, rethrowing the last failure
// unchanged, once max_attempts attempts have failed or when the next sleep would end after
// max_elapsed since the first attempt began.
//
// The defaults are sized for a hot key: 8 clients calling Limiter::request(tx, ...) on one key, each call
// a SERIALIZABLE transaction through run_transaction (the benchmark suite's hot-key cell, BENCHMARKS.md).
// There 8-31% of the calls fail their first attempt with 40001, and the former defaults (8 attempts,
// 2 s) let 0.8-2.9% of all calls give up and throw 40001 at the application. A call that has already
// failed fails its next attempt with probability 0.55-0.6 (synchronous_commit=off) to 0.8 (on), so the
// share of calls still failing after n attempts falls geometrically: with attempts unbounded, no call of
// 694,553 (synchronous_commit=on, 2-core machine) needed more than 45 attempts or 2.2 s, and the tail
// extrapolates to about 1 call in 2 million exhausting 50 attempts, 1 in 10^11 exhausting 100. Hence
// max_attempts = 100. Their back-off sleeps (1, 2, 4, ... 64 ms, then up to 100 ms each) add up to about
// 5 s on average, so a call that keeps losing gives up after 5-6 s; max_elapsed = 10 s caps every call
// whatever the server's speed (a transaction that conflicts every time, a slow server), which keeps
// latency bounded. A retried call needs 3-4 attempts on average (p99 latency 50 ms, p99.9 0.6 s in that
// test). Callers with a deadline of their own (a request handler) should lower max_elapsed to fit it.
struct RetryPolicy {
    int max_attempts = 100;
    std::chrono::milliseconds max_elapsed{10000};
    std::chrono::microseconds base_delay{1000};
    std::chrono::microseconds max_delay{100000};
    // Called on the retrying thread before every retry. A Limiter calls it from many threads at once,
    // so it must be thread-safe there. An exception it throws ends the loop and propagates.
    std::function<void(const RetryEvent &)> on_retry{};
};

// The upper bound of the back-off after failed attempt `attempt` (from 1): the range full jitter draws
// from.
[[nodiscard]] std::chrono::microseconds backoff_ceiling(const RetryPolicy &policy, int attempt) noexcept;

namespace detail {
// The connection run_transaction takes, libpqxx's own type showing through: with libpqxx 6.4
// pqxx::connection_base, the base of all its connection classes (pqxx::connection, pqxx::lazyconnection,
// ...); with libpqxx 7 and 8 pqxx::connection, the only one (7 keeps connection_base as a deprecated alias
// of it, 8 removes it). Code that passes a pqxx::connection compiles unchanged on all three.
#if PQXX_VERSION_MAJOR < 7
using RetryConnection = pqxx::connection_base;
#else
using RetryConnection = pqxx::connection;
#endif

void run_transaction(RetryConnection &conn, isolation level, const RetryPolicy &policy,
                     const std::function<void(pqxx::work &)> &body);
}  // namespace detail

// Runs fn(tx) in a fresh transaction on conn at the given isolation level and commits it; returns what
// fn returned. When the attempt fails with 40001 or 40P01 (anywhere: in fn or at COMMIT), or the
// connection is lost before COMMIT was sent, the transaction is rolled back and the WHOLE of fn runs
// again in a new transaction, after a jittered back-off (a lost connection is re-established first:
// session state such as SET variables or temporary tables is gone then). How it is re-established
// depends on libpqxx: 6.4 reopens the same connection object (libpqxx's reactivation), which keeps its
// prepared statements' definitions (re-prepared on use) and its error handlers; 7 and 8 never reopen a
// connection, so run_transaction move-assigns conn a new pqxx::connection made from the lost one's
// connection_string(): the object's prepared statements and its notice and notification handlers are gone
// with the old session (prepare again inside fn, where a retried fn needs them).
//
// - fn may run several times: keep side effects outside the database out of it (or make them
//   idempotent), and let exceptions from the database escape it, since swallowing one leaves an
//   aborted transaction behind. The in-transaction Limiter calls (limiter.request(tx, ...)) are meant
//   to be called from fn; they never retry on their own.
// - Limits with storage => 'memory' are such a side effect: their decisions take effect when the
//   statement runs and do not roll back with a failed attempt, so a memory-limit call inside fn is
//   applied again on every attempt (after 40001, 40P01 or a lost connection: each request consumes, each
//   refund gives back, once more). Call limits that fn uses with durable or unlogged storage (they roll
//   back with the attempt), or make a memory-limit call outside fn: once before run_transaction (a pooled
//   Limiter call, which never applies twice: InDoubt instead), and give the units back (refund) if the
//   transaction finally fails, if that matters.
// - Throws, unchanged: any exception fn throws other than the retried ones (not retried, fn ran once);
//   pqxx::in_doubt_error when the connection broke during COMMIT (whether it committed is unknown, so
//   it is never retried); the last 40001/40P01/broken_connection once the policy is exhausted.
// - conn belongs to the calling thread for the duration, as any libpqxx connection; it must have no
//   open transaction.
template <typename F>
auto run_transaction(detail::RetryConnection &conn, isolation level, F &&fn, const RetryPolicy &policy = RetryPolicy{})
    -> std::invoke_result_t<F &, pqxx::work &> {
    using Result = std::invoke_result_t<F &, pqxx::work &>;
    static_assert(!std::is_reference_v<Result>,
                  "run_transaction: return a value, not a reference into the transaction");
    if constexpr (std::is_void_v<Result>) {
        detail::run_transaction(conn, level, policy, [&fn](pqxx::work &tx) { fn(tx); });
    } else {
        std::optional<Result> result;  // reassigned by every attempt; only the committed one is returned
        detail::run_transaction(conn, level, policy, [&fn, &result](pqxx::work &tx) { result.emplace(fn(tx)); });
        return std::move(*result);
    }
}

}  // namespace pg_ratelimit
