// The Limiter's policy cache (client/src/policy_cache.hpp), without a server: how many reads it makes
// for limits with and without per-key overrides, and the bound on per-key entries.
#include <gtest/gtest.h>

#include <chrono>
#include <stdexcept>
#include <string>
#include <thread>

#include "policy_cache.hpp"

namespace pr = pg_ratelimit;
using pr::detail::PolicyCache;
using pr::detail::PolicyRead;
using std::chrono::milliseconds;

namespace {

// A server stand-in (one database): the limit's numbers, "gold" with ten times the capacity when the limit
// has overrides; counts the reads.
struct FakeServer {
    bool overrides = false;
    double base = 10;  // the limit's capacity
    int reads = 0;
    PolicyCache::Fetch fetch_for(const std::string &key) {
        return [this, key] {
            ++reads;
            const double capacity = overrides && key == "gold" ? base * 10 : base;
            return PolicyRead{pr::Policy{capacity, std::chrono::seconds{60}, capacity, "token_bucket"}, overrides};
        };
    }
};

// A scope as database_scope() makes them: host, port and database name, NUL-separated.
std::string scope(const std::string &host, const std::string &database) {
    return host + std::string(1, '\0') + "5432" + std::string(1, '\0') + database;
}

double capacity_of(PolicyCache &cache, FakeServer &server, const std::string &key,
                   const std::string &in = scope("/run/postgresql", "app")) {
    const std::optional<pr::Policy> policy = cache.get(in, "api", key, server.fetch_for(key));
    return policy ? policy->capacity : -1;
}

}  // namespace

TEST(PolicyCacheTest, LimitWithoutOverridesIsReadOnceForAllKeys) {
    PolicyCache cache{milliseconds{60000}};
    FakeServer server;
    for (const char *key : {"a", "b", "c", "gold", "a"}) EXPECT_EQ(capacity_of(cache, server, key), 10);
    EXPECT_EQ(server.reads, 1);
    EXPECT_EQ(cache.key_entries(), 0u);
}

TEST(PolicyCacheTest, LimitWithOverridesIsReadPerKeyAndCached) {
    PolicyCache cache{milliseconds{60000}};
    FakeServer server;
    server.overrides = true;
    EXPECT_EQ(capacity_of(cache, server, "gold"), 100);
    EXPECT_EQ(capacity_of(cache, server, "bronze"), 10);
    EXPECT_EQ(capacity_of(cache, server, "gold"), 100);
    EXPECT_EQ(capacity_of(cache, server, "bronze"), 10);
    EXPECT_EQ(server.reads, 2);
    EXPECT_EQ(cache.key_entries(), 2u);
}

TEST(PolicyCacheTest, OverridesAppearAndGoAfterTheTtl) {
    PolicyCache cache{milliseconds{50}};
    FakeServer server;
    EXPECT_EQ(capacity_of(cache, server, "gold"), 10);
    server.overrides = true;
    EXPECT_EQ(capacity_of(cache, server, "gold"), 10);  // still the limit's, within the TTL
    std::this_thread::sleep_for(milliseconds{80});
    EXPECT_EQ(capacity_of(cache, server, "gold"), 100);
    EXPECT_EQ(capacity_of(cache, server, "other"), 10);
    server.overrides = false;
    std::this_thread::sleep_for(milliseconds{80});
    const int before = server.reads;
    EXPECT_EQ(capacity_of(cache, server, "gold"), 10);
    EXPECT_EQ(capacity_of(cache, server, "other"), 10);  // the limit's entry again: no read
    EXPECT_EQ(server.reads, before + 1);
}

TEST(PolicyCacheTest, PerKeyEntriesAreBounded) {
    PolicyCache cache{milliseconds{60000}, 3};
    FakeServer server;
    server.overrides = true;
    for (int i = 0; i < 10; ++i) {
        EXPECT_EQ(capacity_of(cache, server, "k" + std::to_string(i)), 10);
        EXPECT_LE(cache.key_entries(), 3u);
    }
    EXPECT_EQ(server.reads, 10);
    EXPECT_EQ(capacity_of(cache, server, "gold"), 100);
    EXPECT_LE(cache.key_entries(), 3u);
}

TEST(PolicyCacheTest, ZeroTtlReadsEveryTime) {
    PolicyCache cache{milliseconds{0}};
    FakeServer server;
    for (int i = 0; i < 3; ++i) EXPECT_EQ(capacity_of(cache, server, "a"), 10);
    EXPECT_EQ(server.reads, 3);
}

TEST(PolicyCacheTest, FailedReadLeavesTheCacheAsItWas) {
    PolicyCache cache{milliseconds{50}};
    FakeServer server;
    EXPECT_EQ(capacity_of(cache, server, "a"), 10);
    std::this_thread::sleep_for(milliseconds{80});
    EXPECT_THROW((void)cache.get(scope("/run/postgresql", "app"), "api", "a",
                                 []() -> PolicyRead { throw std::runtime_error("lost"); }),
                 std::runtime_error);
    EXPECT_EQ(capacity_of(cache, server, "a"), 10);  // the expired entry is read again, not stuck refreshing
    EXPECT_EQ(server.reads, 2);
}

// One Limiter, a database per tenant, a limit of the same name with other numbers in each (and the same
// database name on another server): each scope has its own entries, with and without overrides.
TEST(PolicyCacheTest, SameLimitInAnotherDatabaseIsCachedApart) {
    PolicyCache cache{milliseconds{60000}};
    FakeServer tenant_a;
    FakeServer tenant_b;
    tenant_b.base = 25;
    FakeServer elsewhere;  // a database named like tenant_a's, on another server
    elsewhere.base = 7;
    elsewhere.overrides = true;
    for (int round = 0; round < 2; ++round) {
        EXPECT_EQ(capacity_of(cache, tenant_a, "k", scope("/run/postgresql", "tenant_a")), 10);
        EXPECT_EQ(capacity_of(cache, tenant_b, "k", scope("/run/postgresql", "tenant_b")), 25);
        EXPECT_EQ(capacity_of(cache, elsewhere, "k", scope("db2.internal", "tenant_a")), 7);
        EXPECT_EQ(capacity_of(cache, elsewhere, "gold", scope("db2.internal", "tenant_a")), 70);
        EXPECT_EQ(capacity_of(cache, tenant_a, "gold", scope("/run/postgresql", "tenant_a")), 10);
    }
    EXPECT_EQ(tenant_a.reads, 1);
    EXPECT_EQ(tenant_b.reads, 1);
    EXPECT_EQ(elsewhere.reads, 2);  // per key there: the limit has overrides
    EXPECT_EQ(cache.key_entries(), 2u);
}
