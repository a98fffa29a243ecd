#include "policy_cache.hpp"

#include <iterator>

namespace pg_ratelimit::detail {
namespace {

std::string joined(const std::string &scope, const std::string &limit) {
    std::string out;
    out.reserve(scope.size() + 1 + limit.size());
    out.append(scope).push_back('\0');
    out.append(limit);
    return out;
}

std::string joined(const std::string &scope, const std::string &limit, const std::string &key) {
    std::string out = joined(scope, limit);
    out.push_back('\0');
    out.append(key);
    return out;
}

}  // namespace

std::optional<Policy> PolicyCache::get(const std::string &scope, const std::string &limit, const std::string &key,
                                       const Fetch &fetch) {
    if (ttl_.count() <= 0) return fetch().policy;
    const std::string limit_id = joined(scope, limit);
    bool marked = false;  // this thread set the limit entry's refreshing flag
    {
        const std::lock_guard<std::mutex> guard(mutex_);
        const auto found = entries_.find(limit_id);
        if (found != entries_.end()) {
            Entry &entry = found->second;
            const Clock::time_point now = Clock::now();
            const bool fresh = entry.refreshing || now < entry.expires;
            if (fresh && !entry.per_key) return entry.policy;
            if (fresh) {
                const auto own = keys_.find(joined(scope, limit, key));
                if (own != keys_.end() && now < own->second.expires) return own->second.policy;
            } else {
                entry.refreshing = true;  // this thread reads again; the others keep the old value meanwhile
                marked = true;
            }
        }
    }
    // Fetched without holding the lock: it is a round trip to the server.
    PolicyRead fresh;
    try {
        fresh = fetch();
    } catch (...) {
        const std::lock_guard<std::mutex> guard(mutex_);
        const auto found = entries_.find(limit_id);
        if (marked && found != entries_.end()) found->second.refreshing = false;
        throw;
    }
    const std::lock_guard<std::mutex> guard(mutex_);
    const Clock::time_point now = Clock::now();
    entries_[limit_id] = Entry{fresh.per_key ? std::nullopt : fresh.policy, now + ttl_, false, fresh.per_key};
    if (fresh.per_key) {
        const std::string key_id = joined(scope, limit, key);
        if (keys_.find(key_id) == keys_.end()) make_room(now);
        keys_[key_id] = KeyEntry{fresh.policy, now + ttl_};
    }
    return fresh.policy;
}

void PolicyCache::make_room(Clock::time_point now) {
    if (keys_.size() < max_keys_) return;
    for (auto it = keys_.begin(); it != keys_.end();) it = it->second.expires <= now ? keys_.erase(it) : std::next(it);
    if (keys_.size() >= max_keys_) keys_.clear();
}

std::size_t PolicyCache::key_entries() {
    const std::lock_guard<std::mutex> guard(mutex_);
    return keys_.size();
}

}  // namespace pg_ratelimit::detail
