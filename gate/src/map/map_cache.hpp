// The map endpoint's answers, cached per request identity for map_cache_ttl. One cache for the process,
// shared by the I/O threads (a mutex held for a lookup): a client's connections land on any thread, and a
// cache per thread would ask the endpoint once per thread.
#pragma once

#include <chrono>
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "limiter/plan.hpp"

namespace gate::map {

using MapAnswer = std::shared_ptr<const std::vector<limiter::MapLimit>>;

class MapCache {
  public:
    MapCache(std::chrono::microseconds ttl, std::size_t capacity) : ttl_(ttl), capacity_(capacity) {}

    // A fresh answer for this identity, or null.
    MapAnswer find(const std::string &identity, std::chrono::steady_clock::time_point now);
    void store(const std::string &identity, MapAnswer answer, std::chrono::steady_clock::time_point now);
    [[nodiscard]] std::size_t size() const;

  private:
    struct Entry {
        MapAnswer answer;
        std::chrono::steady_clock::time_point expires;
        std::list<std::string>::iterator age;
    };
    mutable std::mutex mutex_;
    std::chrono::microseconds ttl_;
    std::size_t capacity_;
    std::unordered_map<std::string, Entry> entries_;
    std::list<std::string> oldest_first_;  // insertion order: the oldest entry goes when the cache is full
};

}  // namespace gate::map
