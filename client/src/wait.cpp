// Limiter::wait: throttle (delay the caller) instead of rejecting, within a time budget.
#include <algorithm>
#include <thread>

#include "limiter_core.hpp"
#include "pg_ratelimit/limiter.hpp"
#include "random.hpp"

namespace pg_ratelimit {

Decision Limiter::wait(const std::string &key, const std::string &limit, std::chrono::milliseconds max_wait,
                       double cost) {
    using Clock = std::chrono::steady_clock;
    using std::chrono::microseconds;
    const Clock::time_point deadline = Clock::now() + max_wait;
    const auto left = [&] { return std::chrono::duration_cast<microseconds>(deadline - Clock::now()); };

    for (;;) {
        // The common case costs one call, and a denial that cannot be waited out writes nothing.
        Decision now = request(key, limit, cost);
        if (now.allowed || now.retry_after > left()) return now;

        // The wait fits. Take the units ahead of time (a reservation in debt) and sleep until they are
        // due: concurrent waiters are then served in the order they reserved, instead of all waking at
        // the same instant and racing for the same units again.
        Decision ahead = core_->pooled(detail::Call::request, detail::CallArgs{key, limit, cost, true});
        if (ahead.allowed) {
            if (ahead.retry_after > left()) {
                // Others queued up in between and our turn comes too late: give the units back.
                (void)refund(key, limit, cost);
                ahead.allowed = false;
                ahead.remaining = 0;
                return ahead;
            }
            std::this_thread::sleep_for(ahead.retry_after);
            ahead.reset_after = std::max(microseconds{0}, ahead.reset_after - ahead.retry_after);
            ahead.retry_after = microseconds{0};
            return ahead;
        }

        // The limit's max_reserved is used up: wait until the request could succeed, spread out a little
        // so that waiters denied together do not come back together, then try again.
        if (ahead.retry_after > left()) return ahead;
        const microseconds jitter = detail::uniform_up_to(ahead.retry_after / 10 + microseconds{1000});
        std::this_thread::sleep_for(std::min(left(), ahead.retry_after + jitter));
    }
}

}  // namespace pg_ratelimit
