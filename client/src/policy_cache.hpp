// The limits' definitions (Decision::policy), cached per Limiter so that a call sends the rate_limit_*
// function alone instead of reading the limit every time.
//
// Per database: a limit is a row of one database's rate_limit_config, and one Limiter may serve several
// databases (a database per tenant, through the in-transaction calls), where one name may have other
// numbers. Every entry belongs to a scope, the database the call ran in (database_scope.hpp).
//
// Per-key tiers: a key with an override (rate_limit_override) has numbers of its own. The read
// (rate_limit_policy) returns the key's numbers and whether its limit has any override at all. A limit
// without overrides is cached per name, one entry whatever the number of keys, as before; the keys of a
// limit with overrides are cached per (scope, limit, key), in a bounded map.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>

#include "pg_ratelimit/decision.hpp"

namespace pg_ratelimit::detail {

// What one read returns: the key's policy (nullopt: the limit's row was not visible), and whether the
// limit has overrides (its keys' policies may differ).
struct PolicyRead {
    std::optional<Policy> policy{};
    bool per_key = false;
};

// Thread-safe. An entry is filled the first time a decision on its limit (or, for a limit with overrides,
// its key) succeeds, and read again once it is older than the TTL. Only names the server accepted are
// cached (the lookup follows a successful decision), so the map of limits stays as small as the set of
// limits in use; a limit whose row was not visible is cached as unknown (nullopt) like any other answer.
class PolicyCache {
  public:
    using Clock = std::chrono::steady_clock;
    using Fetch = std::function<PolicyRead()>;

    // ttl <= 0: no caching, every lookup fetches. Beyond 100 years (say milliseconds::max(), "forever"),
    // 100 years, so that the expiry time cannot overflow. max_keys: the most (limit, key) entries kept.
    explicit PolicyCache(std::chrono::milliseconds ttl, std::size_t max_keys = 10000)
        : ttl_(std::min(ttl, MAX_TTL)), max_keys_(std::max<std::size_t>(max_keys, 1)) {}
    PolicyCache(const PolicyCache &) = delete;
    PolicyCache &operator=(const PolicyCache &) = delete;

    // The policy of `key` under `limit` in the database `scope` (database_scope(): fetch() must read that
    // database). Calls fetch() when the limit is not cached yet for the scope or its entry has expired, or
    // when the limit has overrides and the key's entry is missing or expired; while one thread refreshes an
    // expired limit entry, the others get the previous value at once rather than all reading the same row.
    // An exception from fetch() propagates and leaves the cache as it was.
    std::optional<Policy> get(const std::string &scope, const std::string &limit, const std::string &key,
                              const Fetch &fetch);

    // (scope, limit, key) entries held (for tests).
    std::size_t key_entries();

  private:
    static constexpr std::chrono::milliseconds MAX_TTL = std::chrono::hours{24 * 365 * 100};

    struct Entry {
        std::optional<Policy> policy{};  // the limit's (when !per_key)
        Clock::time_point expires{};
        bool refreshing = false;  // a thread is fetching a newer value
        bool per_key = false;     // the limit has overrides: see keys_
    };
    struct KeyEntry {
        std::optional<Policy> policy{};
        Clock::time_point expires{};
    };

    // Room for one more key entry: the expired ones go, and all of them if that is not enough.
    void make_room(Clock::time_point now);

    const std::chrono::milliseconds ttl_;
    const std::size_t max_keys_;
    std::mutex mutex_;
    // By scope '\0' limit, and scope '\0' limit '\0' key (none of them holds NUL); guarded by mutex_.
    std::unordered_map<std::string, Entry> entries_;
    std::unordered_map<std::string, KeyEntry> keys_;
};

}  // namespace pg_ratelimit::detail
