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
#include <unordered_set>
#include <vector>

#include "limiter/plan.hpp"

namespace gate::map {

using MapAnswer = std::shared_ptr<const std::vector<limiter::MapLimit>>;

constexpr std::size_t MAX_VARY_HEADERS = 16;
// Distinct limits (numbers) the map endpoint may have the gate define, per gate process: an endpoint that
// returns new numbers on every answer (a bug, or a hostile endpoint) cannot fill rate_limit_config.
constexpr std::size_t MAX_MAP_DEFINITIONS = 100;

class MapCache {
  public:
    MapCache(std::chrono::microseconds ttl, std::size_t capacity) : ttl_(ttl), capacity_(capacity) {}

    // A fresh answer for this identity, or null.
    MapAnswer find(const std::string &identity, std::chrono::steady_clock::time_point now);
    void store(const std::string &identity, MapAnswer answer, std::chrono::steady_clock::time_point now);
    [[nodiscard]] std::size_t size() const;

    // The header fields (lower case) that any answer named in Vary so far: every identity includes their
    // values, so that an answer is never applied to a request that differs in one of them. learn_vary adds
    // names; false (nothing learned: do not cache that answer) past MAX_VARY_HEADERS.
    [[nodiscard]] std::vector<std::string> vary() const;
    bool learn_vary(const std::vector<std::string> &names);

    // The distinct database limits the map endpoint's answers may make the gate define (each a
    // rate_limit_define row): true when every name is already known or fits under MAX_MAP_DEFINITIONS
    // (then they are known from now on); false, nothing admitted, when they would pass it.
    bool admit_definitions(const std::vector<std::string> &names);

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
    std::vector<std::string> vary_;
    std::unordered_set<std::string> definitions_;
};

}  // namespace gate::map
