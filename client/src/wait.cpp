// Limiter::reserve_within and Limiter::wait: reservations bounded in time (rate_limit_reserve), and
// throttling (delaying the caller) on top of them instead of rejecting.
#include <algorithm>
#include <optional>
#include <thread>

#include "limiter_core.hpp"
#include "pg_ratelimit/limiter.hpp"
#include "random.hpp"

namespace pg_ratelimit {
namespace {

using std::chrono::microseconds;

// The server's longest duration (extension/core/limit.hpp, MAX_DURATION): a bound at or beyond it is no
// bound, and none is sent (NULL), so that converting a huge one can never overflow.
constexpr std::int64_t MAX_DURATION_MICROS = std::int64_t{100} * 366 * 86400 * 1000000 * 1000;

std::optional<std::int64_t> bound_micros(microseconds max_wait) {
    if (max_wait.count() >= MAX_DURATION_MICROS) return std::nullopt;
    return max_wait.count();  // a negative one is the server's to refuse (InvalidArgument, 22023)
}

std::optional<std::int64_t> bound_micros(std::chrono::milliseconds max_wait) {
    if (max_wait.count() >= MAX_DURATION_MICROS / 1000) return std::nullopt;
    return bound_micros(microseconds{max_wait});
}

}  // namespace

Decision Limiter::reserve_within(const std::string &key, const std::string &limit, std::chrono::milliseconds max_wait,
                                 double cost) {
    return core_->pooled(detail::Call::reserve, detail::CallArgs{key, limit, cost, false, 0, bound_micros(max_wait)});
}

Decision Limiter::reserve_within(pqxx::transaction_base &tx, const std::string &key, const std::string &limit,
                                 std::chrono::milliseconds max_wait, double cost) {
    return core_->in_transaction(tx, detail::Call::reserve,
                                 detail::CallArgs{key, limit, cost, false, 0, bound_micros(max_wait)});
}

Decision Limiter::wait(const std::string &key, const std::string &limit, std::chrono::milliseconds max_wait,
                       double cost) {
    using Clock = std::chrono::steady_clock;
    const Clock::time_point deadline = Clock::now() + max_wait;
    const auto left = [&] {
        return std::max(microseconds{0}, std::chrono::duration_cast<microseconds>(deadline - Clock::now()));
    };

    for (;;) {
        // One call in the common case. Reserved only when the units are due before the deadline, so the
        // waiters queue in the order they reserved instead of waking together and racing; and nothing is
        // ever taken that would have to be given back (which needs EXECUTE on rate_limit_refund).
        Decision reserved =
            core_->pooled(detail::Call::reserve, detail::CallArgs{key, limit, cost, false, 0, bound_micros(left())});
        if (reserved.allowed) {
            std::this_thread::sleep_for(reserved.retry_after);
            reserved.reset_after = std::max(microseconds{0}, reserved.reset_after - reserved.retry_after);
            reserved.retry_after = microseconds{0};
            return reserved;
        }
        if (reserved.retry_after > left()) return reserved;

        // A reservation could be admitted before the deadline (the limit's max_reserved holds it back until
        // then), but would it be due by the deadline? retry_after says when a reservation would be due
        // within the time left *from then*, which is later than the deadline. So ask when the units are due
        // at all (rate_limit_check, writes nothing): beyond the deadline, waiting cannot help, and coming
        // back every retry_after until the deadline would only load the server.
        if (check(key, limit, cost).retry_after > left()) return reserved;

        // Wait until it can be admitted, spread out a little so that waiters denied together do not come
        // back together, then try again.
        const microseconds jitter = detail::uniform_up_to(reserved.retry_after / 10 + microseconds{1000});
        std::this_thread::sleep_for(std::min(left(), reserved.retry_after + jitter));
    }
}

}  // namespace pg_ratelimit
