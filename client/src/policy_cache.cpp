#include "policy_cache.hpp"

namespace pg_ratelimit::detail {

std::optional<Policy> PolicyCache::get(const std::string &limit, const Fetch &fetch) {
    if (ttl_.count() <= 0) return fetch();
    {
        const std::lock_guard<std::mutex> guard(mutex_);
        const auto found = entries_.find(limit);
        if (found != entries_.end()) {
            Entry &entry = found->second;
            if (entry.refreshing || Clock::now() < entry.expires) return entry.policy;
            entry.refreshing = true;  // this thread reads the row again; the others keep the old value meanwhile
        }
    }
    // Fetched without holding the lock: it is a round trip to the server.
    std::optional<Policy> fresh;
    try {
        fresh = fetch();
    } catch (...) {
        const std::lock_guard<std::mutex> guard(mutex_);
        const auto found = entries_.find(limit);
        if (found != entries_.end()) found->second.refreshing = false;
        throw;
    }
    const std::lock_guard<std::mutex> guard(mutex_);
    entries_[limit] = Entry{fresh, Clock::now() + ttl_, false};
    return fresh;
}

}  // namespace pg_ratelimit::detail
