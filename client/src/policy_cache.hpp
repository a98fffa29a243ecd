// The limits' definitions (Decision::policy), cached per Limiter so that a call sends the rate_limit_*
// function alone instead of joining rate_limit_config every time.
#pragma once

#include <algorithm>
#include <chrono>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>

#include "pg_ratelimit/decision.hpp"

namespace pg_ratelimit::detail {

// Thread-safe. An entry is filled the first time a decision on its limit succeeds, and read again once
// it is older than the TTL. Only names the server accepted are cached (the lookup follows a successful
// decision), so the map stays as small as the set of limits in use; a limit whose row was not visible
// is cached as unknown (nullopt) like any other answer.
class PolicyCache {
  public:
    using Clock = std::chrono::steady_clock;
    using Fetch = std::function<std::optional<Policy>()>;

    // ttl <= 0: no caching, every lookup fetches. Beyond 100 years (say milliseconds::max(), "forever"),
    // 100 years, so that the expiry time cannot overflow.
    explicit PolicyCache(std::chrono::milliseconds ttl) : ttl_(std::min(ttl, MAX_TTL)) {}
    PolicyCache(const PolicyCache &) = delete;
    PolicyCache &operator=(const PolicyCache &) = delete;

    // The policy of `limit`. Calls fetch() when the name is not cached yet or its entry has expired;
    // while one thread refreshes an expired entry, the others get the previous value at once rather than
    // all reading the same row. An exception from fetch() propagates and leaves the cache as it was.
    std::optional<Policy> get(const std::string &limit, const Fetch &fetch);

  private:
    static constexpr std::chrono::milliseconds MAX_TTL = std::chrono::hours{24 * 365 * 100};

    struct Entry {
        std::optional<Policy> policy{};
        Clock::time_point expires{};
        bool refreshing = false;  // a thread is fetching a newer value
    };

    const std::chrono::milliseconds ttl_;
    std::mutex mutex_;
    std::unordered_map<std::string, Entry> entries_;  // guarded by mutex_
};

}  // namespace pg_ratelimit::detail
