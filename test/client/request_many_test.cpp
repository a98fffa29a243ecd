// Limiter::request_many against a real server: order, duplicates, costs, errors (all or nothing), keys
// that an array literal would mangle, the empty batch, a memory limit in a READ ONLY transaction, and
// 40001 retried (pooled) or surfaced (in the caller's transaction, retried by run_transaction).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <pg_ratelimit/client.hpp>
#include <pqxx/pqxx>
#include <stdexcept>
#include <thread>

#include "array_params.hpp"
#include "decision_rows.hpp"
#include "pqxx_compat.hpp"
#include "support.hpp"

namespace compat = pg_ratelimit::compat;
namespace pr = pg_ratelimit;
using std::chrono::seconds;

namespace {

class RequestManyTest : public test_support::ServerTest {
  protected:
    void SetUp() override {
        ServerTest::SetUp();
        limit = test_support::define_limit("many", 3, "1 minute", 3);
        limiter = std::make_unique<pr::Limiter>(test_support::conninfo(), pr::Options{2});
    }
    std::int64_t left(const std::string &key) { return test_support::units_left(*limiter, key, limit); }

    std::string limit;
    std::unique_ptr<pr::Limiter> limiter;
};

// Keys that a hand-built array literal or SQL splicing would get wrong.
const std::vector<std::string> &tricky_keys() {
    static const std::vector<std::string> keys = {
        "a,b",
        "a",
        "b",
        "\"quoted\"",
        "{braces}",
        "{}",
        "{a,b}",
        "back\\slash",
        "\\",
        "\\\"",
        "NULL",
        "null",
        "",
        " ",
        " spaced ",
        "tab\there",
        "new\nline",
        "'single'",
        "$1",
        "ARRAY[1]",
        "ünïcødé",  // non-ASCII (this file is UTF-8)
        "日本",
        "🚦",                     // 4 bytes
        std::string(1024, 'x'),  // the longest key allowed
    };
    return keys;
}

// A double's IEEE 754 bits (== would call -0.0 and 0.0 equal).
std::uint64_t bits(double value) {
    std::uint64_t out = 0;
    std::memcpy(&out, &value, sizeof out);
    return out;
}

}  // namespace

TEST_F(RequestManyTest, DecisionsComeInKeyOrderAndDuplicatesAreDecidedInTurn) {
    const std::vector<std::string> keys = {"a", "b", "a", "a", "c", "a"};
    const std::vector<pr::Decision> d = limiter->request_many(keys, limit);
    ASSERT_EQ(d.size(), keys.size());
    const bool allowed[] = {true, true, true, true, true, false};
    const std::int64_t remaining[] = {2, 2, 1, 0, 2, 0};
    for (std::size_t i = 0; i < keys.size(); ++i) {
        EXPECT_EQ(d[i].allowed, allowed[i]) << "position " << i + 1;
        EXPECT_EQ(d[i].remaining, remaining[i]) << "position " << i + 1;
        EXPECT_EQ(d[i].limit, limit);
        ASSERT_TRUE(d[i].policy.has_value());
        EXPECT_EQ(d[i].policy->capacity, 3);
        EXPECT_EQ(d[i].policy->period, seconds{60});
    }
    // The denied one is a decision like request()'s, with its Retry-After.
    EXPECT_GT(d[5].retry_after, seconds{19});
    EXPECT_LE(d[5].retry_after, seconds{20});
    EXPECT_EQ(d[5].headers().back().name, "Retry-After");
    EXPECT_EQ(d[0].retry_after, std::chrono::microseconds{0});
    EXPECT_EQ(left("a"), 0);
    EXPECT_EQ(left("b"), 2);
    EXPECT_EQ(left("c"), 2);
}

TEST_F(RequestManyTest, LargeBatchKeepsItsOrder) {
    std::vector<std::string> keys;
    keys.reserve(1000);
    for (int i = 0; i < 1000; ++i) keys.push_back("k" + std::to_string(i % 400));  // 400 keys, some thrice
    const std::vector<pr::Decision> d = limiter->request_many(keys, limit);
    ASSERT_EQ(d.size(), keys.size());
    for (std::size_t i = 0; i < keys.size(); ++i) {
        // k0..k199 appear three times (positions i, i+400, i+800), k200..k399 twice.
        EXPECT_TRUE(d[i].allowed) << i;
        EXPECT_EQ(d[i].remaining, 2 - static_cast<std::int64_t>(i / 400)) << i;
    }
}

TEST_F(RequestManyTest, CostsApplyPerKey) {
    const std::vector<pr::Decision> d = limiter->request_many({"a", "a", "b", "c", "d"}, limit, {2, 2, 0.5, 3, 1});
    ASSERT_EQ(d.size(), 5u);
    EXPECT_TRUE(d[0].allowed);
    EXPECT_EQ(d[0].remaining, 1);
    EXPECT_FALSE(d[1].allowed);  // 1 left, 2 asked
    EXPECT_EQ(d[1].remaining, 1);
    EXPECT_TRUE(d[2].allowed);
    EXPECT_EQ(d[2].remaining, 2);  // 2.5: whole units only
    EXPECT_TRUE(d[3].allowed);
    EXPECT_EQ(d[3].remaining, 0);
    EXPECT_EQ(d[4].remaining, 2);
    EXPECT_EQ(left("a"), 1);

    // The overload without costs, in the caller's transaction: 1 each.
    auto conn = test_support::connect();
    pqxx::work tx{*conn};
    const std::vector<pr::Decision> in_tx = limiter->request_many(tx, {"d", "e"}, limit);
    tx.commit();
    EXPECT_EQ(in_tx[0].remaining, 1);
    EXPECT_EQ(in_tx[1].remaining, 2);
}

TEST_F(RequestManyTest, CostsOfAnotherSizeAreRefusedBeforeAnythingIsSent) {
    EXPECT_THROW((void)limiter->request_many({"a", "b"}, limit, {1}), std::invalid_argument);
    EXPECT_THROW((void)limiter->request_many({}, limit, {1}), std::invalid_argument);
    auto conn = test_support::connect();
    pqxx::work tx{*conn};
    EXPECT_THROW((void)limiter->request_many(tx, {"a"}, limit, {1, 1}), std::invalid_argument);
    // No statement failed in tx (the server was not asked), so tx is still usable.
    EXPECT_NO_THROW(tx.exec("SELECT 1"));
    EXPECT_EQ(limiter->request_many(tx, {"a"}, limit, {2})[0].remaining, 1);
    tx.commit();
    EXPECT_EQ(left("a"), 1);
    EXPECT_EQ(left("b"), 3);
}

TEST_F(RequestManyTest, BadInputIsTypedAndConsumesNothing) {
    try {
        (void)limiter->request_many({"a", "b"}, "client_no_such_limit");
        ADD_FAILURE() << "no exception";
    } catch (const pr::UnknownLimit &error) {
        EXPECT_EQ(error.sqlstate(), "42704");
    }
    // A cost above the capacity at position 2: the key at position 1 is not consumed either.
    try {
        (void)limiter->request_many({"a", "b"}, limit, {1, 4});
        ADD_FAILURE() << "no exception";
    } catch (const pr::InvalidArgument &error) {
        EXPECT_EQ(error.sqlstate(), "22023");
        EXPECT_NE(error.message().find("exceeds the capacity"), std::string::npos) << error.message();
    }
    EXPECT_THROW((void)limiter->request_many({"a"}, limit, {std::nan("")}), pr::InvalidArgument);
    EXPECT_THROW((void)limiter->request_many({"a", "b"}, limit, {1, 0}), pr::InvalidArgument);
    EXPECT_THROW((void)limiter->request_many({"a"}, limit, {std::numeric_limits<double>::infinity()}),
                 pr::InvalidArgument);
    try {
        (void)limiter->request_many({"a", std::string(1025, 'x')}, limit);
        ADD_FAILURE() << "no exception";
    } catch (const pr::InvalidArgument &error) {
        EXPECT_EQ(error.sqlstate(), "22001");
    }
    // A NUL byte is refused by the client (libpq would cut the key there; the server rejects it anyway).
    try {
        (void)limiter->request_many({"a", std::string("b\0c", 3)}, limit);
        ADD_FAILURE() << "no exception";
    } catch (const pr::InvalidArgument &error) {
        EXPECT_EQ(error.sqlstate(), "22021");
        EXPECT_NE(error.message().find("key 2"), std::string::npos) << error.message();
    }
    EXPECT_EQ(left("a"), 3);
    EXPECT_EQ(left("b"), 3);
    EXPECT_EQ(limiter->stats().retries, 0u);  // bad input is never retried

    // In the caller's transaction: the same types, and tx is aborted as after any failed statement.
    auto conn = test_support::connect();
    {
        pqxx::work tx{*conn};
        EXPECT_THROW((void)limiter->request_many(tx, {"a"}, "client_no_such_limit"), pr::UnknownLimit);
    }
    {
        pqxx::work tx{*conn};
        EXPECT_THROW((void)limiter->request_many(tx, {"a", "b"}, limit, {3, 3.5}), pr::InvalidArgument);
    }
    EXPECT_EQ(left("a"), 3);
}

// Every key arrives as given: the client checks each row's key against the key sent (a mismatch throws),
// and each key's own state shows exactly one unit consumed: "a,b" is neither "a" nor "b", "" is not
// "NULL", and so on.
TEST_F(RequestManyTest, TrickyKeysRoundTrip) {
    const std::vector<std::string> &keys = tricky_keys();
    const std::vector<pr::Decision> pooled = limiter->request_many(keys, limit);
    ASSERT_EQ(pooled.size(), keys.size());
    for (std::size_t i = 0; i < keys.size(); ++i) {
        EXPECT_TRUE(pooled[i].allowed) << i;
        EXPECT_EQ(pooled[i].remaining, 2) << "key " << i << " decided more than once, or merged with another";
    }
    for (const std::string &key : keys) EXPECT_EQ(left(key), 2) << key;

    // The one-off statement in the caller's transaction sends them the same way.
    auto conn = test_support::connect();
    pqxx::work tx{*conn};
    const std::vector<pr::Decision> in_tx = limiter->request_many(tx, keys, limit);
    tx.commit();
    for (std::size_t i = 0; i < keys.size(); ++i) EXPECT_EQ(in_tx[i].remaining, 1) << i;
}

// The parameters themselves, read back by the server: element for element, byte for byte.
TEST_F(RequestManyTest, ArrayParametersArriveUnchanged) {
    const std::vector<std::string> &keys = tricky_keys();
    auto conn = test_support::connect();
    pqxx::work tx{*conn};
    const pqxx::result texts =
        compat::exec_params(tx, "SELECT k, i FROM unnest($1::text[]) WITH ORDINALITY AS u(k, i) ORDER BY i",
                            compat::binary_param(pg_ratelimit::detail::text_array_param(keys)));
    ASSERT_EQ(texts.size(), keys.size());
    for (std::size_t i = 0; i < keys.size(); ++i)
        EXPECT_EQ(std::string(texts[i][0].c_str(), texts[i][0].size()), keys[i]) << i;

    // PostgreSQL 12+ prints a float8 as the shortest text that reads back as the same double.
    const std::vector<double> costs = {0.1, 1.0 / 3, 1e-9, 1e12, -0.0, std::numeric_limits<double>::infinity()};
    const pqxx::result floats =
        compat::exec_params(tx, "SELECT f::text FROM unnest($1::float8[]) WITH ORDINALITY AS u(f, i) ORDER BY i",
                            compat::binary_param(pg_ratelimit::detail::float8_array_param(costs)));
    ASSERT_EQ(floats.size(), costs.size());
    for (std::size_t i = 0; i < costs.size(); ++i) {
        const double back = std::strtod(floats[i][0].c_str(), nullptr);
        EXPECT_EQ(bits(back), bits(costs[i])) << i << ": " << floats[i][0].c_str();  // -0 too
    }
    const pqxx::row empty = compat::exec_params1(tx, "SELECT cardinality($1::text[])",
                                                 compat::binary_param(pg_ratelimit::detail::text_array_param({})));
    EXPECT_EQ(empty[0].as<int>(), 0);
}

// An empty batch returns at once: no statement, so not even the limit's existence is checked.
TEST_F(RequestManyTest, EmptyBatchSendsNothing) {
    EXPECT_TRUE(limiter->request_many({}, limit).empty());
    EXPECT_TRUE(limiter->request_many({}, "client_no_such_limit").empty());
    EXPECT_TRUE(limiter->request_many({}, limit, {}).empty());
    auto conn = test_support::connect();
    pqxx::work tx{*conn};
    EXPECT_TRUE(limiter->request_many(tx, {}, "client_no_such_limit").empty());
    EXPECT_NO_THROW(tx.exec("SELECT 1"));  // nothing failed in tx
}

// A memory limit decides in a READ ONLY transaction (a hot standby, a read replica's session), and its
// consumption is not transactional: rolling the transaction back does not give the units back.
TEST_F(RequestManyTest, MemoryLimitInAReadOnlyTransaction) {
    const std::string memory =
        test_support::define_limit("many_memory", 3, "1 minute", 3, -1, "token_bucket", "memory");
    auto conn = test_support::connect();
    {
        pqxx::read_transaction tx{*conn};
        const std::vector<pr::Decision> d = limiter->request_many(tx, {"m", "m", "n", "m", "m"}, memory);
        ASSERT_EQ(d.size(), 5u);
        EXPECT_EQ(d[0].remaining, 2);
        EXPECT_EQ(d[1].remaining, 1);
        EXPECT_EQ(d[2].remaining, 2);
        EXPECT_TRUE(d[3].allowed);
        EXPECT_EQ(d[3].remaining, 0);
        EXPECT_FALSE(d[4].allowed);
        ASSERT_TRUE(d[4].policy.has_value());  // the policy read is a SELECT: fine read-only
        EXPECT_EQ(d[4].policy->capacity, 3);
        tx.commit();
    }
    {
        pqxx::read_transaction tx{*conn};
        EXPECT_TRUE(limiter->request_many(tx, {"o"}, memory, {2})[0].allowed);
        tx.abort();
    }
    EXPECT_EQ(test_support::units_left(*limiter, "m", memory), 0);
    EXPECT_EQ(test_support::units_left(*limiter, "n", memory), 2);
    EXPECT_EQ(test_support::units_left(*limiter, "o", memory), 1);  // kept despite the rollback

    // A durable limit writes its table, which a READ ONLY transaction refuses (untyped: not bad input).
    pqxx::read_transaction tx{*conn};
    try {
        (void)limiter->request_many(tx, {"m"}, limit);
        ADD_FAILURE() << "no exception";
    } catch (const pqxx::sql_error &error) {
        EXPECT_EQ(error.sqlstate(), "25006") << error.what();
        EXPECT_EQ(dynamic_cast<const pr::Error *>(&error), nullptr);
    }
}

// In the caller's transaction a 40001 is not retried by the call; run_transaction runs the whole
// function again, and every unit is counted once.
TEST_F(RequestManyTest, InTransactionConflictIsRetriedByRunTransaction) {
    (void)limiter->request("hot", limit);  // "hot" has a row: the conflict is an UPDATE
    auto conn = test_support::connect();
    int calls = 0;
    pr::RetryPolicy policy;
    policy.max_elapsed = std::chrono::seconds{30};
    const std::vector<pr::Decision> d = pr::run_transaction(
        *conn, pr::isolation::serializable,
        [&](pqxx::work &tx) {
            ++calls;
            tx.exec("SELECT 1");  // takes the snapshot
            if (calls == 1) {
                auto other = test_support::connect();
                pqxx::work elsewhere{*other};
                compat::exec_params(elsewhere, "SELECT rate_limit_request($1, $2)", "hot", limit);
                elsewhere.commit();
            }
            return limiter->request_many(tx, {"cold", "hot"}, limit);
        },
        policy);
    EXPECT_EQ(calls, 2);
    ASSERT_EQ(d.size(), 2u);
    EXPECT_EQ(d[0].remaining, 2);
    EXPECT_EQ(d[1].remaining, 0);
    EXPECT_EQ(left("cold"), 2);  // the first attempt's consumption was rolled back
    EXPECT_EQ(left("hot"), 0);
}

// The pooled call retries a 40001 by itself, as request() does. Deterministic: another transaction
// holds the key's row lock; the batch (REPEATABLE READ) waits for it, and when it commits, the batch's
// update of that row fails with 40001 and the whole batch runs again.
TEST_F(RequestManyTest, PooledConflictIsRetried) {
    (void)limiter->request("hot", limit);
    const std::string application = test_support::unique_key("client_many_retry");
    pr::Options options;
    options.level = pr::isolation::repeatable_read;
    pr::Limiter batch{test_support::conninfo_with_application_name(application), options};

    auto conn = test_support::connect();
    pqxx::work holder{*conn};
    compat::exec_params(holder, "SELECT rate_limit_request($1, $2)", "hot", limit);  // locks the row
    std::vector<pr::Decision> d;
    std::thread caller([&] { d = batch.request_many({"cold", "hot"}, limit); });
    const bool waited = test_support::wait_for_lock_wait(application);
    holder.commit();
    caller.join();
    ASSERT_TRUE(waited) << "the batch never waited for the row lock";

    const pr::RetryStats stats = batch.stats();
    EXPECT_GE(stats.serialization_failures, 1u);
    EXPECT_GE(stats.retries, 1u);
    EXPECT_EQ(stats.exhausted, 0u);
    ASSERT_EQ(d.size(), 2u);
    EXPECT_EQ(d[0].remaining, 2);
    EXPECT_EQ(d[1].remaining, 0);
    EXPECT_EQ(left("cold"), 2);  // counted once, although its first attempt had consumed it too
    EXPECT_EQ(left("hot"), 0);
}

// decisions_from_batch refuses rows that do not match the keys sent, rather than misattribute them.
TEST_F(RequestManyTest, RowsNotMatchingTheKeysAreRefused) {
    auto conn = test_support::connect();
    pqxx::work tx{*conn};
    const auto rows = [&](const std::string &values) {
        return tx.exec("SELECT * FROM (VALUES " + values + ") AS v(key, position, allowed, remaining, ra, rs, sd)");
    };
    const std::string ok_a = "('a', 1, true, 2::bigint, 0::numeric, 20.5::numeric, false)";
    const std::string ok_b = "('b', 2, false, 0::bigint, 1.25::numeric, 60::numeric, false)";
    using pg_ratelimit::detail::decisions_from_batch;

    const auto good = decisions_from_batch(rows(ok_b + ", " + ok_a), {"a", "b"}, "l");  // placed by position
    ASSERT_EQ(good.size(), 2u);
    EXPECT_TRUE(good[0].allowed);
    EXPECT_EQ(good[0].reset_after, std::chrono::microseconds{20'500'000});
    EXPECT_FALSE(good[1].allowed);
    EXPECT_EQ(good[1].retry_after, std::chrono::microseconds{1'250'000});
    EXPECT_EQ(good[1].limit, "l");

    EXPECT_THROW((void)decisions_from_batch(rows(ok_a + ", " + ok_b), {"a", "c"}, "l"), std::runtime_error);
    EXPECT_THROW((void)decisions_from_batch(rows(ok_a), {"a", "b"}, "l"), std::runtime_error);
    EXPECT_THROW((void)decisions_from_batch(rows(ok_a + ", " + ok_a), {"a", "a"}, "l"), std::runtime_error);
    EXPECT_THROW(
        (void)decisions_from_batch(rows("('a', 0, true, 2::bigint, 0::numeric, 0::numeric, false)"), {"a"}, "l"),
        std::runtime_error);
    EXPECT_THROW(
        (void)decisions_from_batch(rows("('', 1, true, 2::bigint, 0::numeric, 0::numeric, false)"), {"NULL"}, "l"),
        std::runtime_error);
    // A row of another width (a wrapper returning the columns of an older version, say) is refused, not
    // read past its end.
    EXPECT_THROW((void)decisions_from_batch(
                     tx.exec("SELECT 'a' AS key, 1 AS position, true, 2::bigint, 0::numeric, 0::numeric"), {"a"}, "l"),
                 std::runtime_error);
}

// The batch statement is prepared on first use: a schema of wrappers without rate_limit_request_many
// (Options::schema) still serves single keys, and request_many alone reports the missing function.
TEST_F(RequestManyTest, MissingBatchFunctionFailsOnlyTheBatchCall) {
    const std::string s = test_support::unique_key("client_no_batch");
    test_support::exec(
        "CREATE SCHEMA " + s + "; CREATE VIEW " + s +
        ".rate_limit_config AS SELECT * FROM public.rate_limit_config; CREATE FUNCTION " + s +
        ".rate_limit_request(text, text, float8, boolean) RETURNS public.rate_limit_decision"
        " LANGUAGE sql AS 'SELECT * FROM public.rate_limit_request($1, $2, $3, $4)'; CREATE FUNCTION " +
        s +
        ".rate_limit_check(text, text, float8) RETURNS public.rate_limit_decision"
        " LANGUAGE sql AS 'SELECT * FROM public.rate_limit_check($1, $2, $3)'; CREATE FUNCTION " +
        s +
        ".rate_limit_refund(text, text, float8) RETURNS public.rate_limit_decision"
        " LANGUAGE sql AS 'SELECT * FROM public.rate_limit_refund($1, $2, $3)'; CREATE FUNCTION " +
        s +
        ".rate_limit_reset(text, text) RETURNS void LANGUAGE sql AS 'SELECT public.rate_limit_reset($1, $2)';"
        " CREATE FUNCTION " +
        s +
        ".rate_limit_policy(text, text) RETURNS TABLE (algorithm text, rate float8, period interval,"
        " capacity float8, max_reserved float8, overridden boolean, limit_has_overrides boolean, time_zone text)"
        " LANGUAGE sql AS 'SELECT * FROM public.rate_limit_policy($1, $2)'");
    pr::Options options;
    options.schema = s;
    pr::Limiter wrapped{test_support::conninfo(), options};
    EXPECT_EQ(wrapped.request("a", limit).remaining, 2);
    try {
        (void)wrapped.request_many({"a", "b"}, limit);
        ADD_FAILURE() << "no exception";
    } catch (const pr::ExtensionMissing &error) {
        EXPECT_EQ(error.sqlstate(), "42883");
    }
    EXPECT_EQ(wrapped.stats().retries, 0u);
    EXPECT_EQ(wrapped.request("a", limit).remaining, 1);  // the pool's connection is still usable
    EXPECT_EQ(left("b"), 3);
    test_support::exec("DROP SCHEMA " + s + " CASCADE");
}
