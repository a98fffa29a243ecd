// The map endpoint's answers, cached per request identity for map_cache_ttl (per I/O thread: no lock).
#pragma once

#include <chrono>
#include <list>
#include <memory>
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
    [[nodiscard]] std::size_t size() const { return entries_.size(); }

  private:
    struct Entry {
        MapAnswer answer;
        std::chrono::steady_clock::time_point expires;
        std::list<std::string>::iterator age;
    };
    std::chrono::microseconds ttl_;
    std::size_t capacity_;
    std::unordered_map<std::string, Entry> entries_;
    std::list<std::string> oldest_first_;  // insertion order: the oldest entry goes when the cache is full
};

}  // namespace gate::map
