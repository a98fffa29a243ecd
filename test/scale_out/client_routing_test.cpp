// The C++ client's routing over partitions (Options::partitions), against scripts/cluster.sh: run by
// test/scale_out/scale_out_test.sh, which starts 1 proxy and N partitions and passes them in the
// environment:
//   PG_RATELIMIT_PARTITIONS   the partitions' connection strings, one per line, in order
//   PG_RATELIMIT_PROXY        the PL/Proxy proxy's connection string
//   PG_RATELIMIT_DOWN         set while partition 0 is stopped (the OnePartitionDown tests only)
// The limits are defined through the proxy (rate_limit_define runs on every partition): exact (50 per day),
// spread (1,000,000 per day), mem (5 per day, memory), hot (40 per day, 4 shards).
#include <gtest/gtest.h>
#include <cmath>

#include <atomic>
#include <cstdlib>
#include <pg_ratelimit/client.hpp>
#include <pqxx/pqxx>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "key_hash.hpp"
#include "pqxx_compat.hpp"

namespace {

namespace compat = pg_ratelimit::compat;

std::vector<std::string> partitions() {
    const char *listed = std::getenv("PG_RATELIMIT_PARTITIONS");
    if (listed == nullptr) throw std::runtime_error("PG_RATELIMIT_PARTITIONS is not set (run scale_out_test.sh)");
    std::vector<std::string> conninfos;
    std::istringstream lines(listed);
    for (std::string line; std::getline(lines, line);)
        if (!line.empty()) conninfos.push_back(line);
    return conninfos;
}

std::string proxy() {
    const char *conninfo = std::getenv("PG_RATELIMIT_PROXY");
    if (conninfo == nullptr) throw std::runtime_error("PG_RATELIMIT_PROXY is not set (run scale_out_test.sh)");
    return conninfo;
}

pg_ratelimit::Limiter routed() {
    pg_ratelimit::Options options;
    options.partitions = partitions();
    options.pool_size = 2;
    options.retry.max_elapsed = std::chrono::milliseconds(2000);
    return pg_ratelimit::Limiter{"", options};
}

// A key of `partition` (the first of stem0, stem1, ... the hash puts there).
std::string key_on(std::size_t partition, const std::string &stem) {
    const std::size_t count = partitions().size();
    for (int i = 0;; ++i) {
        std::string key = stem + std::to_string(i);
        if (pg_ratelimit::detail::partition_of(key, count) == partition) return key;
    }
}

std::string text_array(const std::vector<std::string> &values) {
    std::string array = "{";
    for (std::size_t i = 0; i < values.size(); ++i) {
        if (i > 0) array += ',';
        array += '"';
        for (const char c : values[i]) {
            if (c == '"' || c == '\\') array += '\\';
            array += c;
        }
        array += '"';
    }
    return array + "}";
}

// Keys of many shapes: ASCII, multi-byte UTF-8 (2, 3 and 4 bytes), every length from 0 to 40, and bytes
// that need quoting in an array literal.
std::vector<std::string> assorted_keys(int count) {
    const char *pieces[] = {"a", "Z", "9", " ", "\"", "\\", ",", "{", "é", "ü", "日本", "€", "😀", "ß", "-", "_"};
    std::vector<std::string> keys;
    unsigned state = 12345;
    for (int i = 0; i < count; ++i) {
        std::string key;
        const int length = i % 41;
        for (int j = 0; j < length; ++j) {
            state = state * 1103515245U + 12345U;
            key += pieces[(state >> 16) % (sizeof(pieces) / sizeof(pieces[0]))];
        }
        keys.push_back(key + (i % 3 == 0 ? std::to_string(i) : ""));
    }
    return keys;
}

TEST(KeyHash, MatchesTheServersHashtextOn20000Keys) {
    const std::vector<std::string> keys = assorted_keys(20000);
    pqxx::connection connection{partitions()[0]};
    pqxx::nontransaction tx{connection};
    const pqxx::result hashes = compat::exec_params(
        tx, "SELECT hashtext(k) FROM unnest($1::text[]) WITH ORDINALITY AS u(k, n) ORDER BY n", text_array(keys));
    ASSERT_EQ(hashes.size(), keys.size());
    int differ = 0;
    for (std::size_t i = 0; i < keys.size(); ++i)
        if (static_cast<std::int32_t>(pg_ratelimit::detail::hashtext(keys[i])) != hashes[i][0].as<std::int32_t>())
            ++differ;
    EXPECT_EQ(differ, 0);
}

TEST(Routing, PartitionOfIsTheProxys) {
    pg_ratelimit::Limiter limiter = routed();
    ASSERT_EQ(limiter.partitions(), partitions().size());
    std::vector<std::string> keys = assorted_keys(500);
    pqxx::connection connection{proxy()};
    pqxx::nontransaction tx{connection};
    const pqxx::result placed = compat::exec_params(
        tx, "SELECT rate_limit_partition_of(k) FROM unnest($1::text[]) WITH ORDINALITY AS u(k, n) ORDER BY n",
        text_array(keys));
    ASSERT_EQ(placed.size(), keys.size());
    for (std::size_t i = 0; i < keys.size(); ++i)
        ASSERT_EQ(limiter.partition_of(keys[i]), placed[i][0].as<std::size_t>()) << "key " << keys[i];
}

TEST(Routing, EightClientsOnOneKeyAdmitExactlyTheAllowance) {
    pg_ratelimit::Limiter limiter = routed();
    std::atomic<int> admitted{0};
    std::vector<std::thread> clients;
    clients.reserve(8);
    for (int c = 0; c < 8; ++c)
        clients.emplace_back([&] {
            for (int i = 0; i < 20; ++i)
                if (limiter.request("client key", "exact").allowed) ++admitted;
        });
    for (std::thread &client : clients) client.join();
    EXPECT_EQ(admitted.load(), 50);
}

TEST(Routing, TenThousandKeysEachOnTheirPartitionOnly) {
    pg_ratelimit::Limiter limiter = routed();
    std::vector<std::string> keys;
    for (int i = 1; i <= 10000; ++i) keys.push_back("c" + std::to_string(i));
    const std::vector<pg_ratelimit::Decision> decisions = limiter.request_many(keys, "spread");
    ASSERT_EQ(decisions.size(), keys.size());
    std::size_t total = 0;
    for (std::size_t partition = 0; partition < partitions().size(); ++partition) {
        pqxx::connection connection{partitions()[partition]};
        pqxx::nontransaction tx{connection};
        const pqxx::result stored = compat::exec_params(
            tx, "SELECT key FROM rate_limit_state WHERE limit_name = $1 AND key LIKE $2", "spread", "c%");
        total += stored.size();
        for (const auto &row : stored)
            ASSERT_EQ(limiter.partition_of(row[0].as<std::string>()), partition) << row[0].as<std::string>();
    }
    EXPECT_EQ(total, keys.size());
}

TEST(Routing, RequestManyKeepsTheCallersPositionsAcrossPartitions) {
    pg_ratelimit::Limiter limiter = routed();
    const std::string a = key_on(0, "pos");
    const std::string b = key_on(partitions().size() - 1, "pos");
    const std::vector<std::string> keys{a, b, a, b, a};
    const std::vector<double> costs{1, 2, 3, 4, 5};
    const std::vector<pg_ratelimit::Decision> decisions = limiter.request_many(keys, "exact", costs);
    ASSERT_EQ(decisions.size(), keys.size());
    const std::int64_t expected[] = {49, 48, 46, 44, 41};  // each key's duplicates in turn
    for (std::size_t i = 0; i < keys.size(); ++i) {
        EXPECT_TRUE(decisions[i].allowed);
        EXPECT_EQ(decisions[i].remaining, expected[i]) << "position " << i + 1;
        EXPECT_EQ(decisions[i].limit, "exact");
    }
}

TEST(Routing, MemoryStorageAndShards) {
    pg_ratelimit::Limiter limiter = routed();
    for (std::size_t partition = 0; partition < partitions().size(); ++partition) {
        const std::string key = key_on(partition, "mem");
        int memory = 0;
        int sharded = 0;
        for (int i = 0; i < 8; ++i) memory += limiter.request(key, "mem").allowed ? 1 : 0;
        for (int i = 0; i < 60; ++i) sharded += limiter.request(key, "hot").allowed ? 1 : 0;
        EXPECT_EQ(memory, 5) << "partition " << partition;
        EXPECT_EQ(sharded, 40) << "partition " << partition;
    }
}

TEST(Routing, TheProxyAndTheClientShareOneCount) {
    pg_ratelimit::Limiter limiter = routed();
    const std::string key = key_on(partitions().size() - 1, "shared");
    for (int i = 0; i < 20; ++i) ASSERT_TRUE(limiter.request(key, "exact").allowed);
    pqxx::connection connection{proxy()};
    pqxx::nontransaction tx{connection};
    const pqxx::result through_proxy = compat::exec_params(
        tx, "SELECT count(*) FILTER (WHERE (rate_limit_request($1, 'exact')).allowed) FROM generate_series(1, 40)",
        key);
    EXPECT_EQ(through_proxy[0][0].as<int>(), 30);
}

TEST(Routing, InTransactionCallsNeedTheKeysPartition) {
    pg_ratelimit::Limiter limiter = routed();
    const std::string here = key_on(0, "tx");
    const std::string there = key_on(1, "tx");
    pqxx::connection connection{partitions()[0]};
    {
        pqxx::work tx{connection};
        EXPECT_TRUE(limiter.request(tx, here, "exact").allowed);
        EXPECT_THROW((void)limiter.request(tx, there, "exact"), pg_ratelimit::WrongPartition);
        // Nothing was sent: the transaction is still usable.
        EXPECT_TRUE(limiter.check(tx, here, "exact").allowed);
        EXPECT_THROW((void)limiter.request_many(tx, {here, there}, "exact"), pg_ratelimit::WrongPartition);
        EXPECT_THROW((void)limiter.request_all(tx, {{here, "exact", 1}, {there, "exact", 1}}),
                     pg_ratelimit::WrongPartition);
        const pg_ratelimit::AllDecision one = limiter.request_all(tx, {{here, "exact", 1}, {here, "spread", 1}});
        EXPECT_TRUE(one.overall.allowed);
        tx.commit();
    }
    EXPECT_EQ(limiter.check(here, "exact").remaining, 47);  // 1 + 1 (request_all) + the check's own 1
}

TEST(Routing, RequestAllNeedsOnePartition) {
    pg_ratelimit::Limiter limiter = routed();
    const std::string a = key_on(0, "all");
    const std::string b = key_on(1, "all");
    EXPECT_THROW((void)limiter.request_all({{a, "exact", 1}, {b, "exact", 1}}), pg_ratelimit::WrongPartition);
    EXPECT_EQ(limiter.check(a, "exact").remaining, 49);  // nothing consumed
    const pg_ratelimit::AllDecision both = limiter.request_all({{b, "exact", 1}, {b, "spread", 2}});
    EXPECT_TRUE(both.overall.allowed);
    EXPECT_EQ(both.decisions.size(), 2U);
}

TEST(Routing, BadPartitionListsAreRefused) {
    pg_ratelimit::Options three;
    three.partitions = {partitions()[0], partitions()[0], partitions()[0]};
    EXPECT_THROW(pg_ratelimit::Limiter("", three), std::invalid_argument);
    pg_ratelimit::Options two;
    two.partitions = {partitions()[0], partitions()[0]};
    EXPECT_THROW(pg_ratelimit::Limiter(partitions()[0], two), std::invalid_argument);
    // The same server twice: refused, whatever the other entries.
    pg_ratelimit::Options twice;
    twice.partitions = partitions();
    twice.partitions.back() = twice.partitions.front();
    EXPECT_THROW(pg_ratelimit::Limiter("", twice), std::invalid_argument);
}

// A partition whose database is neither UTF8 nor SQL_ASCII (here LATIN1) stores a key converted, and
// PL/Proxy's hashtext(key) there hashes other bytes than the client's partition_of: refused when the
// Limiter connects to it.
TEST(Routing, APartitionThatIsNotUtf8IsRefused) {
    pqxx::connection admin{partitions()[1]};
    {
        pqxx::nontransaction tx{admin};
        compat::exec0(tx, "DROP DATABASE IF EXISTS routing_latin1");
        compat::exec0(tx,
                      "CREATE DATABASE routing_latin1 ENCODING 'LATIN1' LC_COLLATE 'C' LC_CTYPE 'C' "
                      "TEMPLATE template0");
    }
    pg_ratelimit::Options options;
    options.partitions = {partitions()[0], partitions()[1] + " dbname=routing_latin1"};
    try {
        pg_ratelimit::Limiter limiter{"", options};
        ADD_FAILURE() << "a LATIN1 partition was accepted";
    } catch (const pg_ratelimit::WrongPartition &error) {
        EXPECT_NE(std::string(error.what()).find("partition 1's database encoding is LATIN1"), std::string::npos)
            << error.what();
    }
    pqxx::nontransaction tx{admin};
    compat::exec0(tx, "DROP DATABASE routing_latin1");
}

// A bad cost or key anywhere in a batch is refused before the first partition decides: nothing consumed on
// the partitions of the keys before it (a single server refuses such a call whole).
TEST(Routing, RequestManyRefusesABadElementBeforeAnyPartitionDecides) {
    pg_ratelimit::Limiter limiter = routed();
    const std::string a = key_on(0, "bad");
    const std::string b = key_on(partitions().size() - 1, "bad");
    for (const double bad : {-1.0, 0.0, std::nan(""), 1e13}) {
        try {
            (void)limiter.request_many({a, b}, "exact", {1, bad});
            ADD_FAILURE() << "cost " << bad << " was accepted";
        } catch (const pg_ratelimit::InvalidArgument &e) {
            EXPECT_EQ(e.sqlstate(), std::string("22023"));
        }
    }
    try {
        (void)limiter.request_many({a, std::string(1025, 'k')}, "exact");
        ADD_FAILURE() << "a key of 1,025 bytes was accepted";
    } catch (const pg_ratelimit::InvalidArgument &e) {
        EXPECT_EQ(e.sqlstate(), std::string("22001"));
    }
    EXPECT_EQ(limiter.check(a, "exact").remaining, 49);  // only the check's own unit: nothing was consumed
}

// Partition 0 stopped and started again (PG_RATELIMIT_STOP_PARTITION0, PG_RATELIMIT_START_PARTITION0: shell
// commands): its keys' calls fail with a connection error meanwhile, the other partitions' keys work, a
// Limiter made meanwhile works for them too, and once it is back its keys work again on the same Limiters,
// with nothing done.
TEST(OnePartitionDown, OnlyItsKeysFailAndTheyRecoverWithoutAction) {
    const char *stop = std::getenv("PG_RATELIMIT_STOP_PARTITION0");
    const char *start = std::getenv("PG_RATELIMIT_START_PARTITION0");
    ASSERT_TRUE(stop != nullptr && start != nullptr) << "run by scale_out_test.sh";
    pg_ratelimit::Options options;
    options.partitions = partitions();
    options.retry.max_elapsed = std::chrono::milliseconds(500);
    pg_ratelimit::Limiter before{"", options};
    const std::string down = key_on(0, "down");
    const std::string up = key_on(1, "down");
    ASSERT_TRUE(before.request(down, "exact").allowed);
    ASSERT_TRUE(before.request(up, "exact").allowed);

    ASSERT_EQ(std::system(stop), 0);
    EXPECT_THROW((void)before.request(down, "exact"), pqxx::broken_connection);
    EXPECT_TRUE(before.request(up, "exact").allowed);
    pg_ratelimit::Limiter during{"", options};  // partition 0 unreachable: made all the same
    EXPECT_TRUE(during.request(up, "exact").allowed);
    EXPECT_THROW((void)during.request(down, "exact"), pqxx::broken_connection);

    ASSERT_EQ(std::system(start), 0);
    EXPECT_EQ(before.request(down, "exact").remaining, 48);
    EXPECT_EQ(during.request(down, "exact").remaining, 47);
    EXPECT_EQ(during.request(up, "exact").remaining, 46);
}

}  // namespace
