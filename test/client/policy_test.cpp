// Decision::policy and the Limiter's policy cache: calls send the rate_limit_* function alone, and a
// limit's row in rate_limit_config is read on first use and again after Options::policy_ttl.
//
// To count what reaches the server, the Limiter is pointed (by Options::schema) at a schema of thin
// wrappers: each rate_limit_* wrapper logs its call, and rate_limit_config is a view over a function
// that logs every statement reading it and hides the limits listed in a `hidden` table.
#include <gtest/gtest.h>

#include <atomic>
#include <pg_ratelimit/client.hpp>
#include <pqxx/pqxx>
#include <thread>
#include <vector>

#include "pqxx_compat.hpp"
#include "support.hpp"

namespace compat = pg_ratelimit::compat;
namespace pr = pg_ratelimit;
using std::chrono::milliseconds;
using std::chrono::seconds;

namespace {

std::string field(const std::vector<pr::HttpField> &fields, const std::string &name) {
    for (const auto &f : fields)
        if (f.name == name) return f.value;
    return "<absent>";
}

class PolicyTest : public test_support::ServerTest {
  protected:
    void SetUp() override {
        ServerTest::SetUp();
        limit = test_support::define_limit("policy", 3, "1 minute", 3);
        key = test_support::unique_key("k");
    }

    void TearDown() override {
        if (!schema.empty()) test_support::exec("DROP SCHEMA " + schema + " CASCADE");
    }

    // Creates the counting wrapper schema (see the file comment) and returns Options pointing at it.
    pr::Options counting_options(milliseconds policy_ttl) {
        schema = test_support::unique_key("client_policy");
        std::string sql = R"(
            CREATE SCHEMA @s;
            CREATE TABLE @s.calls (call text NOT NULL);
            CREATE TABLE @s.config_reads (at timestamptz DEFAULT clock_timestamp());
            CREATE TABLE @s.hidden (name text PRIMARY KEY);
            CREATE FUNCTION @s.read_config() RETURNS SETOF public.rate_limit_config LANGUAGE plpgsql AS $$
            BEGIN
                INSERT INTO @s.config_reads DEFAULT VALUES;
                RETURN QUERY SELECT * FROM public.rate_limit_config WHERE name NOT IN (SELECT name FROM @s.hidden);
            END $$;
            CREATE VIEW @s.rate_limit_config AS SELECT * FROM @s.read_config();
            CREATE FUNCTION @s.rate_limit_request(text, text, float8, boolean)
                RETURNS public.rate_limit_decision LANGUAGE sql AS $$
                INSERT INTO @s.calls VALUES ('request');
                SELECT * FROM public.rate_limit_request($1, $2, $3, $4) $$;
            CREATE FUNCTION @s.rate_limit_check(text, text, float8)
                RETURNS public.rate_limit_decision LANGUAGE sql AS $$
                INSERT INTO @s.calls VALUES ('check');
                SELECT * FROM public.rate_limit_check($1, $2, $3) $$;
            CREATE FUNCTION @s.rate_limit_refund(text, text, float8)
                RETURNS public.rate_limit_decision LANGUAGE sql AS $$
                INSERT INTO @s.calls VALUES ('refund');
                SELECT * FROM public.rate_limit_refund($1, $2, $3) $$;
            CREATE FUNCTION @s.rate_limit_reset(text, text) RETURNS void LANGUAGE sql AS $$
                INSERT INTO @s.calls VALUES ('reset');
                SELECT public.rate_limit_reset($1, $2) $$;
            CREATE FUNCTION @s.rate_limit_request_many(text[], text, float8[])
                RETURNS TABLE (key text, "position" integer, allowed boolean, remaining bigint,
                               retry_after interval, reset_after interval, shadow_denied boolean)
                LANGUAGE sql AS $$
                INSERT INTO @s.calls VALUES ('request_many');
                SELECT * FROM public.rate_limit_request_many($1, $2, $3) $$;
            CREATE FUNCTION @s.rate_limit_policy(key text, limit_name text, OUT algorithm text, OUT rate float8,
                                                 OUT period interval, OUT capacity float8, OUT max_reserved float8,
                                                 OUT overridden boolean, OUT limit_has_overrides boolean,
                                                 OUT time_zone text)
                LANGUAGE sql AS $$ SELECT * FROM public.rate_limit_policy($1, $2) $$;)";
        for (std::size_t at = sql.find("@s"); at != std::string::npos; at = sql.find("@s", at))
            sql.replace(at, 2, schema);
        test_support::exec(sql);
        pr::Options options;
        options.schema = schema;
        options.policy_ttl = policy_ttl;
        return options;
    }

    // Statements that read the wrapper's rate_limit_config so far, and rate_limit_* calls.
    int config_reads() { return count("SELECT count(*) FROM " + schema + ".config_reads"); }
    int calls() { return count("SELECT count(*) FROM " + schema + ".calls"); }
    void hide(const std::string &name) {
        test_support::exec("INSERT INTO " + schema + ".hidden VALUES ('" + name + "')");
    }

    static int count(const std::string &sql) {
        auto conn = test_support::connect();
        pqxx::nontransaction tx{*conn};
        return compat::exec1(tx, sql)[0].as<int>();
    }

    static void redefine(const std::string &name, double rate, const std::string &period, double capacity) {
        auto conn = test_support::connect();
        pqxx::work tx{*conn};
        compat::exec_params(tx, "SELECT rate_limit_define($1, $2, $3::interval, capacity => $4)", name, rate, period,
                            capacity);
        tx.commit();
    }

    std::string limit;
    std::string key;
    std::string schema;  // the wrapper schema, if the test made one
};

}  // namespace

// Every kind of call that returns a decision carries the policy, pooled or in the caller's transaction.
TEST_F(PolicyTest, EveryDecisionCarriesThePolicy) {
    pr::Limiter limiter{test_support::conninfo()};
    const std::string expected = "\"" + limit + "\";q=3;w=60";
    for (const pr::Decision &d : {limiter.request(key, limit), limiter.check(key, limit), limiter.refund(key, limit)}) {
        ASSERT_TRUE(d.policy.has_value());
        EXPECT_EQ(d.policy->rate, 3);
        EXPECT_EQ(d.policy->period, seconds{60});
        EXPECT_EQ(d.policy->capacity, 3);
        EXPECT_EQ(field(d.headers(), "RateLimit-Policy"), expected);
    }
    // A Limiter whose cache is still empty fills it from inside the caller's transaction.
    pr::Limiter fresh{test_support::conninfo()};
    auto conn = test_support::connect();
    pqxx::work tx{*conn};
    const pr::Decision d = fresh.request(tx, key, limit);
    tx.commit();
    ASSERT_TRUE(d.policy.has_value());
    EXPECT_EQ(field(d.headers(), "RateLimit-Policy"), expected);
    EXPECT_EQ(pr::ratelimit_policy_field(fresh.check(key, limit)), expected);
}

// The policy names the algorithm, and its fields are right for each: a sliding window's capacity is its rate.
TEST_F(PolicyTest, EveryAlgorithmCarriesItsPolicy) {
    struct Case {
        const char *algorithm;
        double capacity;
        const char *field;
    };
    for (const Case &c : {Case{"token_bucket", 8, ";q=8;w=2"}, Case{"gcra", 8, ";q=8;w=2"},
                          Case{"fixed_window", 8, ";q=8;w=2"}, Case{"sliding_window", 4, ";q=4;w=2"}}) {
        {
            auto conn = test_support::connect();
            pqxx::work tx{*conn};
            if (std::string{c.algorithm} == "sliding_window")
                compat::exec_params(tx, "SELECT rate_limit_define($1, 4, '2 s', $2)", limit, c.algorithm);
            else
                compat::exec_params(tx, "SELECT rate_limit_define($1, 4, '2 s', $2, capacity => 8)", limit,
                                    c.algorithm);
            tx.commit();
        }
        pr::Options options;
        options.policy_ttl = milliseconds{0};  // read the row just redefined
        pr::Limiter limiter{test_support::conninfo(), options};
        const pr::Decision d = limiter.request(key + c.algorithm, limit);
        ASSERT_TRUE(d.policy.has_value()) << c.algorithm;
        EXPECT_EQ(d.policy->algorithm, c.algorithm);
        EXPECT_EQ(d.policy->rate, 4) << c.algorithm;
        EXPECT_EQ(d.policy->period, seconds{2}) << c.algorithm;
        EXPECT_EQ(d.policy->capacity, c.capacity) << c.algorithm;
        EXPECT_EQ(field(d.headers(), "RateLimit-Policy"), "\"" + limit + "\"" + c.field) << c.algorithm;
        EXPECT_EQ(d.remaining, static_cast<std::int64_t>(c.capacity) - 1) << c.algorithm;
        EXPECT_TRUE(d.policy->time_zone.empty()) << c.algorithm;
    }
}

// A calendar quota's policy is the window in progress: this month in Paris, as long as PostgreSQL's own
// calendar arithmetic says it is (28 to 31 days, give or take the hour of a daylight-saving change).
TEST_F(PolicyTest, CalendarPolicyIsTheMonthInProgress) {
    std::int64_t month_seconds = 0;
    {
        auto conn = test_support::connect();
        pqxx::work tx{*conn};
        compat::exec_params(
            tx, "SELECT rate_limit_define($1, 1000, '1 month', 'fixed_window', time_zone => 'Europe/Paris')", limit);
        month_seconds =
            compat::exec1(
                tx,
                "SELECT extract(epoch FROM (date_trunc('month', now() AT TIME ZONE 'Europe/Paris')"
                " + interval '1 month') AT TIME ZONE 'Europe/Paris'"
                " - date_trunc('month', now() AT TIME ZONE 'Europe/Paris') AT TIME ZONE 'Europe/Paris')::bigint")[0]
                .as<std::int64_t>();
        tx.commit();
    }
    pr::Options options;
    options.policy_ttl = milliseconds{0};
    pr::Limiter limiter{test_support::conninfo(), options};
    const pr::Decision d = limiter.request(key, limit);
    ASSERT_TRUE(d.policy.has_value());
    EXPECT_EQ(d.policy->time_zone, "Europe/Paris");
    EXPECT_EQ(d.policy->algorithm, "fixed_window");
    EXPECT_EQ(d.policy->period, seconds{month_seconds});
    EXPECT_GE(month_seconds, 28 * 86400 - 3600);
    EXPECT_LE(month_seconds, 31 * 86400 + 3600);
    EXPECT_EQ(field(d.headers(), "RateLimit-Policy"), "\"" + limit + "\";q=1000;w=" + std::to_string(month_seconds));
}

// The point of the cache: with a fresh entry, a call is the rate_limit_* function alone. Only the first
// call on a limit reads its row; if the statement still joined rate_limit_config, every call would.
TEST_F(PolicyTest, CallsSendTheFunctionAloneOnceThePolicyIsCached) {
    pr::Limiter limiter{test_support::conninfo(), counting_options(std::chrono::hours{1})};
    EXPECT_EQ(config_reads(), 0);  // opening the pool prepares statements but runs none
    for (int i = 0; i < 20; ++i) {
        const pr::Decision d = limiter.request(key, limit, 0.1);
        ASSERT_TRUE(d.policy.has_value());
        EXPECT_EQ(d.policy->capacity, 3);
    }
    (void)limiter.check(key, limit);
    (void)limiter.refund(key, limit);
    limiter.reset(key, limit);
    EXPECT_EQ(calls(), 23);
    EXPECT_EQ(config_reads(), 1);

    // In the caller's transaction too (the cache is the Limiter's, whatever the connection).
    auto conn = test_support::connect();
    pqxx::work tx{*conn};
    for (int i = 0; i < 5; ++i) EXPECT_TRUE(limiter.request(tx, key, limit, 0.1).policy.has_value());
    // ... and nothing stays behind on the caller's connection: no named prepared statement.
    EXPECT_EQ(compat::exec1(tx, "SELECT count(*) FROM pg_prepared_statements")[0].as<int>(), 0);
    tx.commit();
    EXPECT_EQ(calls(), 28);
    EXPECT_EQ(config_reads(), 1);

    // Another limit is another entry: one more read.
    const std::string other = test_support::define_limit("policy_other", 7, "1 hour", 7);
    EXPECT_EQ(limiter.request(key, other).policy->capacity, 7);
    EXPECT_EQ(limiter.request(key, other).policy->capacity, 7);
    EXPECT_EQ(config_reads(), 2);
}

// "Forever" is a valid ttl: the row is read once.
TEST_F(PolicyTest, HugeTtlReadsTheRowOnce) {
    pr::Limiter limiter{test_support::conninfo(), counting_options(milliseconds::max())};
    for (int i = 0; i < 3; ++i) EXPECT_EQ(limiter.request(key, limit).policy->capacity, 3);
    EXPECT_EQ(config_reads(), 1);
}

// A call that fails reads nothing and caches nothing: unknown names never enter the cache.
TEST_F(PolicyTest, FailedCallsReadNoPolicy) {
    pr::Limiter limiter{test_support::conninfo(), counting_options(std::chrono::hours{1})};
    EXPECT_THROW((void)limiter.request(key, "client_no_such_limit"), pr::UnknownLimit);
    EXPECT_THROW((void)limiter.request(key, limit, 0), pr::InvalidArgument);
    EXPECT_EQ(config_reads(), 0);
}

// A redefined limit shows in decisions once the entry is older than policy_ttl, and not before.
TEST_F(PolicyTest, RedefinitionShowsAfterTheTtl) {
    pr::Options patient;
    patient.policy_ttl = std::chrono::hours{1};
    pr::Limiter stale{test_support::conninfo(), patient};
    pr::Options brief;
    brief.policy_ttl = milliseconds{100};
    pr::Limiter fresh{test_support::conninfo(), brief};
    pr::Options uncached;
    uncached.policy_ttl = milliseconds{0};
    pr::Limiter always{test_support::conninfo(), uncached};
    for (pr::Limiter *l : {&stale, &fresh, &always}) EXPECT_EQ(l->request(key, limit).policy->capacity, 3);

    redefine(limit, 10, "10 seconds", 20);
    EXPECT_EQ(always.request(key, limit).policy->capacity, 20);  // ttl 0: read on every call
    std::this_thread::sleep_for(milliseconds{150});
    const pr::Decision d = fresh.request(key, limit);
    ASSERT_TRUE(d.policy.has_value());
    EXPECT_EQ(d.policy->rate, 10);
    EXPECT_EQ(d.policy->period, seconds{10});
    EXPECT_EQ(d.policy->capacity, 20);
    EXPECT_EQ(field(d.headers(), "RateLimit-Policy"), "\"" + limit + "\";q=20;w=10");
    // The decision itself is always the server's, under the new definition; only the policy is cached.
    const pr::Decision cached = stale.request(test_support::unique_key("new"), limit);
    EXPECT_EQ(cached.policy->capacity, 3);
    EXPECT_EQ(cached.remaining, 19);

    // Also when the refreshing call runs inside the caller's transaction.
    redefine(limit, 10, "10 seconds", 30);
    std::this_thread::sleep_for(milliseconds{150});
    auto conn = test_support::connect();
    pqxx::work tx{*conn};
    EXPECT_EQ(fresh.request(tx, key, limit).policy->capacity, 30);
    tx.commit();
}

// The limit's row is not visible (here hidden by the wrapper view, as a dropped row or one outside the
// caller's snapshot would be): the decision stands, with an unknown policy and no RateLimit-Policy
// field, as it was with the old join. The unknown answer is cached like any other.
TEST_F(PolicyTest, MissingConfigRowLeavesThePolicyUnknown) {
    pr::Limiter limiter{test_support::conninfo(), counting_options(std::chrono::hours{1})};
    hide(limit);
    for (int i = 0; i < 3; ++i) {
        const pr::Decision d = limiter.request(key, limit);
        EXPECT_TRUE(d.allowed);
        EXPECT_EQ(d.remaining, 2 - i);
        EXPECT_FALSE(d.policy.has_value());
        const auto fields = d.headers();
        EXPECT_EQ(fields.size(), 1u);
        EXPECT_EQ(field(fields, "RateLimit-Policy"), "<absent>");
        EXPECT_EQ(field(fields, "RateLimit"), pr::ratelimit_field(d));
    }
    const pr::Decision denied = limiter.request(key, limit);
    EXPECT_FALSE(denied.allowed);
    EXPECT_EQ(denied.headers().size(), 2u);  // RateLimit and Retry-After
    auto conn = test_support::connect();
    pqxx::work tx{*conn};
    EXPECT_FALSE(limiter.check(tx, key, limit).policy.has_value());
    tx.commit();
    EXPECT_EQ(config_reads(), 1);
}

// A cached policy becomes unknown at the next refresh once the row is no longer visible.
TEST_F(PolicyTest, VanishedConfigRowTurnsACachedPolicyUnknown) {
    pr::Limiter limiter{test_support::conninfo(), counting_options(milliseconds{100})};
    EXPECT_TRUE(limiter.request(key, limit).policy.has_value());
    hide(limit);
    std::this_thread::sleep_for(milliseconds{150});
    const pr::Decision d = limiter.request(key, limit);
    EXPECT_TRUE(d.allowed);
    EXPECT_FALSE(d.policy.has_value());
}

// A limit dropped while its policy is cached: the server refuses the call (UnknownLimit, as always),
// and once the limit is defined again, calls succeed and soon carry the new definition.
TEST_F(PolicyTest, DroppedLimitDoesNotBreakLaterRequests) {
    pr::Options options;
    options.policy_ttl = milliseconds{100};
    pr::Limiter limiter{test_support::conninfo(), options};
    EXPECT_EQ(limiter.request(key, limit).policy->capacity, 3);
    test_support::exec("SELECT rate_limit_drop('" + limit + "')");
    EXPECT_THROW((void)limiter.request(key, limit), pr::UnknownLimit);
    EXPECT_THROW((void)limiter.check(key, limit), pr::UnknownLimit);
    redefine(limit, 5, "1 minute", 5);
    EXPECT_TRUE(limiter.request(key, limit).allowed);
    std::this_thread::sleep_for(milliseconds{150});
    const pr::Decision d = limiter.request(key, limit);
    EXPECT_TRUE(d.allowed);
    ASSERT_TRUE(d.policy.has_value());
    EXPECT_EQ(d.policy->capacity, 5);
}

// Many threads share one Limiter's cache: every decision has its policy, and the row is read about
// once per ttl rather than once per call (each thread may read it on first use, at most one thread
// at a time refreshes it after that).
TEST_F(PolicyTest, ThreadsShareTheCache) {
    pr::Options options = counting_options(milliseconds{200});
    options.pool_size = 4;
    pr::Limiter limiter{test_support::conninfo(), options};
    const std::string roomy = test_support::define_limit("policy_roomy", 1e6, "1 second", 1e6);
    constexpr int threads = 8;
    constexpr int per_thread = 100;
    std::atomic<int> with_policy{0};
    std::vector<std::thread> workers;
    workers.reserve(threads);
    const auto start = std::chrono::steady_clock::now();
    for (int t = 0; t < threads; ++t)
        workers.emplace_back([&, t] {
            for (int i = 0; i < per_thread; ++i) {
                const pr::Decision d = limiter.request("thread_" + std::to_string(t), roomy);
                with_policy += d.policy.has_value() && d.policy->capacity == 1e6;
            }
        });
    for (auto &w : workers) w.join();
    const auto elapsed = std::chrono::steady_clock::now() - start;
    EXPECT_EQ(with_policy.load(), threads * per_thread);
    // First use: at most one read per pooled connection at once; then at most one per ttl (each refresh
    // is claimed by one thread).
    const auto periods = std::chrono::duration_cast<milliseconds>(elapsed).count() / 200 + 1;
    EXPECT_LE(config_reads(), static_cast<int>(options.pool_size + periods)) << "over " << periods << " ttl periods";
    EXPECT_EQ(calls(), threads * per_thread);
}

// Per-key tiers: a key with an override carries its own numbers (RateLimit-Policy shows them), the other
// keys the limit's, in every kind of call.
TEST_F(PolicyTest, OverriddenKeyCarriesItsOwnPolicy) {
    test_support::exec("SELECT rate_limit_override('" + key + "', '" + limit + "', 30)");
    const std::string other = test_support::unique_key("other");
    pr::Limiter limiter{test_support::conninfo()};
    const pr::Decision own = limiter.request(key, limit);
    ASSERT_TRUE(own.policy.has_value());
    EXPECT_EQ(own.policy->capacity, 30);  // the limit's capacity 3, scaled by the rates 30 / 3
    EXPECT_EQ(own.policy->rate, 30);
    EXPECT_EQ(own.remaining, 29);
    EXPECT_EQ(pr::ratelimit_policy_field(own), "\"" + limit + "\";q=30;w=60");
    const pr::Decision theirs = limiter.request(other, limit);
    ASSERT_TRUE(theirs.policy.has_value());
    EXPECT_EQ(theirs.policy->capacity, 3);
    EXPECT_EQ(theirs.remaining, 2);
    {
        auto conn = test_support::connect();
        pqxx::work tx{*conn};
        EXPECT_EQ(limiter.check(tx, key, limit).policy->capacity, 30);
        EXPECT_EQ(limiter.check(tx, other, limit).policy->capacity, 3);
        const auto in_tx = limiter.request_many(tx, {other, key}, limit);
        EXPECT_EQ(in_tx.at(0).policy->capacity, 3);
        EXPECT_EQ(in_tx.at(1).policy->capacity, 30);
        tx.commit();
    }
    const auto batch = limiter.request_many({key, other, key}, limit);
    ASSERT_EQ(batch.size(), 3u);
    EXPECT_EQ(batch[0].policy->capacity, 30);
    EXPECT_EQ(batch[1].policy->capacity, 3);
    EXPECT_EQ(batch[2].policy->capacity, 30);
}

// A limit without overrides is read once for any number of keys; the keys of a limit with overrides are
// read one by one (and each once within the TTL).
TEST_F(PolicyTest, LimitsWithOverridesAreReadPerKey) {
    pr::Limiter limiter{test_support::conninfo(), counting_options(std::chrono::hours{1})};
    for (int i = 0; i < 3; ++i)
        EXPECT_EQ(limiter.request(test_support::unique_key("plain"), limit).policy->capacity, 3);
    EXPECT_EQ(config_reads(), 1);
    const std::string tiered = test_support::define_limit("tiered", 3, "1 minute", 3);
    test_support::exec("SELECT rate_limit_override('gold', '" + tiered + "', 6)");
    const std::string keys[] = {"gold", test_support::unique_key("a"), test_support::unique_key("b")};
    for (int round = 0; round < 2; ++round)
        for (const std::string &k : keys) EXPECT_EQ(limiter.check(k, tiered).policy->capacity, k == "gold" ? 6 : 3);
    EXPECT_EQ(config_reads(), 1 + 3);
    const auto batch = limiter.request_many({keys[1], keys[2], "gold"}, tiered);
    EXPECT_EQ(batch.at(2).policy->capacity, 6);
    EXPECT_EQ(config_reads(), 1 + 3);  // all cached
}
