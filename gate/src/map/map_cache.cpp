#include "map/map_cache.hpp"

namespace gate::map {

std::size_t MapCache::size() const {
    const std::lock_guard<std::mutex> lock(mutex_);
    return entries_.size();
}

MapAnswer MapCache::find(const std::string &identity, std::chrono::steady_clock::time_point now) {
    const std::lock_guard<std::mutex> lock(mutex_);
    const auto found = entries_.find(identity);
    if (found == entries_.end()) return nullptr;
    if (found->second.expires <= now) {
        oldest_first_.erase(found->second.age);
        entries_.erase(found);
        return nullptr;
    }
    return found->second.answer;
}

void MapCache::store(const std::string &identity, MapAnswer answer, std::chrono::steady_clock::time_point now) {
    if (ttl_.count() <= 0 || capacity_ == 0) return;
    const std::lock_guard<std::mutex> lock(mutex_);
    const auto found = entries_.find(identity);
    if (found != entries_.end()) {
        oldest_first_.erase(found->second.age);
        entries_.erase(found);
    }
    while (entries_.size() >= capacity_) {
        entries_.erase(oldest_first_.front());
        oldest_first_.pop_front();
    }
    oldest_first_.push_back(identity);
    entries_.emplace(identity, Entry{std::move(answer), now + ttl_, std::prev(oldest_first_.end())});
}

}  // namespace gate::map
