#include "map/map_cache.hpp"

#include <algorithm>

namespace gate::map {

std::size_t MapCache::size() const {
    const std::lock_guard<std::mutex> lock(mutex_);
    return entries_.size();
}

std::vector<std::string> MapCache::vary() const {
    const std::lock_guard<std::mutex> lock(mutex_);
    return vary_;
}

bool MapCache::learn_vary(const std::vector<std::string> &names) {
    const std::lock_guard<std::mutex> lock(mutex_);
    std::vector<std::string> added;
    for (const auto &name : names) {
        if (std::find(vary_.begin(), vary_.end(), name) == vary_.end() &&
            std::find(added.begin(), added.end(), name) == added.end())
            added.push_back(name);
    }
    if (vary_.size() + added.size() > MAX_VARY_HEADERS) return false;
    vary_.insert(vary_.end(), added.begin(), added.end());
    std::sort(vary_.begin(), vary_.end());
    return true;
}

bool MapCache::admit_definitions(const std::vector<std::string> &names) {
    const std::lock_guard<std::mutex> lock(mutex_);
    std::size_t fresh = 0;
    for (std::size_t i = 0; i < names.size(); ++i) {
        if (definitions_.count(names[i]) != 0) continue;
        if (std::find(names.begin(), names.begin() + static_cast<std::ptrdiff_t>(i), names[i]) !=
            names.begin() + static_cast<std::ptrdiff_t>(i))
            continue;
        ++fresh;
    }
    if (definitions_.size() + fresh > MAX_MAP_DEFINITIONS) return false;
    definitions_.insert(names.begin(), names.end());
    return true;
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
