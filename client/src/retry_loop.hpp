// The retry loop shared by run_transaction (the caller's connection) and the Limiter's pooled calls.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>

#include "pg_ratelimit/retry.hpp"

namespace pg_ratelimit::detail {

struct RetryCounters {
    std::atomic<std::uint64_t> retries{0};
    std::atomic<std::uint64_t> serialization_failures{0};
    std::atomic<std::uint64_t> deadlocks{0};
    std::atomic<std::uint64_t> connections_lost{0};
    std::atomic<std::uint64_t> exhausted{0};
    std::atomic<std::uint64_t> in_doubt{0};  // counted by the pooled calls (run_pooled.cpp)
};

// Runs attempt() until it returns. It is run again, after a jittered back-off, when it throws
// pqxx::serialization_failure, pqxx::deadlock_detected or pqxx::broken_connection, within the policy's
// bounds; every other exception (pqxx::in_doubt_error in particular) propagates at once. attempt()
// must run a whole transaction, from BEGIN to COMMIT: a retry starts it again from the beginning.
// After a lost connection, on_connection_lost() runs before anything else (even when giving up), so
// that the next use of the connection starts from a clean one. counters may be null.
void retry_loop(const RetryPolicy &policy, RetryCounters *counters, const std::function<void()> &attempt,
                const std::function<void()> &on_connection_lost);

// "READ COMMITTED", "REPEATABLE READ" or "SERIALIZABLE".
const char *isolation_sql(isolation level) noexcept;

}  // namespace pg_ratelimit::detail
