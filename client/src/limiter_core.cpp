#include "limiter_core.hpp"

#include <exception>
#include <pqxx/except>
#include <pqxx/nontransaction>
#include <stdexcept>
#include <string>
#include <utility>

#include "database_scope.hpp"
#include "key_hash.hpp"
#include "pg_ratelimit/errors.hpp"
#include "pqxx_compat.hpp"

namespace pg_ratelimit::detail {
namespace {

// Whether the server keeps a key's UTF-8 bytes as sent under this client_encoding (the pooled connections'
// UTF8, or SQL_ASCII: no conversion).
bool keeps_utf8(const std::string &client_encoding) {
    return client_encoding == "UTF8" || client_encoding == "SQL_ASCII";
}

bool ascii(const std::string &text) {
    for (const char c : text)
        if (static_cast<unsigned char>(c) >= 0x80) return false;
    return true;
}

// In a transaction of the caller's: a LATIN1 connection would turn a UTF-8 key's (or limit name's) bytes
// into other characters, another key (or limit) than the pooled calls and SQL callers name; only texts that
// are not ASCII differ.
void require_utf8(compat::Connection &connection, const std::vector<std::string> &texts, const char *kind,
                  const char *what) {
    for (const std::string &text : texts) {
        if (ascii(text)) continue;
        const std::string encoding = connection.get_client_encoding();
        if (keeps_utf8(encoding)) return;
        std::string message = "ERROR:  pg_ratelimit: ";
        message += what;
        message += " got a ";
        message += kind;
        message += " that is not ASCII (\"" + text + "\") on a connection whose client_encoding is ";
        message += encoding;
        message +=
            "\nHINT:  Keys and limit names are UTF-8: open the connection with client_encoding=UTF8, as the "
            "Limiter's own connections are.\n";
        throw InvalidArgument(message, "", "22021");
    }
}

// With partitions, a partition's database must store the key's UTF-8 bytes as sent, so that PL/Proxy's
// hashtext(key) there hashes the bytes the client hashes (partition_of); a LATIN1 one would not.
void require_utf8_partition(pqxx::connection &connection, std::size_t partition) {
    pqxx::nontransaction tx{connection};
    const std::string encoding = compat::exec1(tx, "SHOW server_encoding")[0].c_str();
    if (!keeps_utf8(encoding))
        throw WrongPartition("pg_ratelimit: partition " + std::to_string(partition) + "'s database encoding is " +
                             encoding +
                             ": routing needs UTF8 (or SQL_ASCII) databases, so that the client and PL/Proxy hash "
                             "the same bytes of a key");
}

// What a call asked for (InDoubt::requests()), with the cost it was given: settle's is the actual one,
// reset has none.
std::vector<LimitRequest> requests_of(Call call, const CallArgs &args) {
    const double cost = call == Call::settle ? args.actual : call == Call::reset ? 0 : args.cost;
    return {LimitRequest{args.key, args.limit, cost}};
}

std::vector<LimitRequest> requests_of(const BatchArgs &args) {
    std::vector<LimitRequest> requests;
    requests.reserve(args.keys.size());
    for (std::size_t i = 0; i < args.keys.size(); ++i)
        requests.push_back(LimitRequest{args.keys[i], args.limit, args.costs != nullptr ? (*args.costs)[i] : 1});
    return requests;
}

// The servers a Limiter calls: its conninfo, or the partitions (a power of two, the conninfo then empty).
std::vector<std::string> servers_of(const std::string &conninfo, const Options &options) {
    if (options.partitions.empty()) return {conninfo};
    const std::size_t count = options.partitions.size();
    if ((count & (count - 1)) != 0)
        throw std::invalid_argument("pg_ratelimit: Options::partitions has " + std::to_string(count) +
                                    " servers; their number must be a power of two (1, 2, 4, 8...): keys go to "
                                    "partition hashtext(key) & (N - 1), as PL/Proxy routes them");
    if (!conninfo.empty())
        throw std::invalid_argument(
            "pg_ratelimit: a Limiter with Options::partitions takes an empty conninfo (the partitions' "
            "connection strings say where each is)");
    // The same server twice would decide the keys of two partitions in one place and leave another
    // partition's keys unreached (a copy-paste slip that no call would show).
    for (std::size_t i = 0; i < count; ++i)
        for (std::size_t j = i + 1; j < count; ++j)
            if (options.partitions[i] == options.partitions[j])
                throw std::invalid_argument(
                    "pg_ratelimit: Options::partitions names the same server twice (partitions " + std::to_string(i) +
                    " and " + std::to_string(j) + ")");
    return options.partitions;
}

std::string key_list(const std::vector<std::string> &keys) {
    std::string list;
    for (std::size_t i = 0; i < keys.size() && i < 3; ++i) list += (i > 0 ? ", \"" : "\"") + keys[i] + "\"";
    return keys.size() > 3 ? list + ", ..." : list;
}

}  // namespace

// With partitions, a partition that cannot be reached when the Limiter is made (a server down, or
// restarting) does not keep the others from being used: its pool connects when a call needs it, and its
// keys' calls fail with the connection's error until it is back. Any other failure (a partition without
// the extension: ExtensionMissing), or every partition unreachable, fails the construction, as a single
// server's does.
LimiterCore::LimiterCore(const std::string &conninfo, Options options)
    : options_(std::move(options)), statements_(options_.schema), policies_(options_.policy_ttl, options_.policy_keys) {
    const std::vector<std::string> servers = servers_of(conninfo, options_);
    scopes_.resize(servers.size());
    for (std::size_t partition = 0; partition < servers.size(); ++partition)
        pools_.push_back(std::make_unique<Pool>(
            servers[partition], options_.pool_size, options_.acquire_timeout,
            [this, partition, partitions = servers.size()](pqxx::connection &connection) {
                // Keys are UTF-8 bytes: another client_encoding (conninfo's, PGCLIENTENCODING) would have
                // the server convert them into other characters, another key than SQL callers name.
                connection.set_client_encoding("UTF8");
                if (partitions > 1) require_utf8_partition(connection, partition);
                // The session default, so that BEGIN alone starts a transaction at the configured level.
                pqxx::nontransaction setup{connection};
                compat::exec0(setup, std::string("SET SESSION CHARACTERISTICS AS TRANSACTION ISOLATION LEVEL ") +
                                         isolation_sql(options_.level));
                statements_.prepare_on(connection);
                const std::lock_guard<std::mutex> guard(scopes_mutex_);
                if (scopes_[partition].empty()) scopes_[partition] = database_scope(connection);
            },
            servers.size() == 1));
    if (servers.size() == 1) return;
    std::exception_ptr unreachable;
    std::size_t reached = 0;
    for (const auto &pool : pools_) {
        try {
            (void)pool->acquire();  // opens its first connection, kept idle
            ++reached;
        } catch (const pqxx::broken_connection &) {
            if (!unreachable) unreachable = std::current_exception();
        }
    }
    if (reached == 0) std::rethrow_exception(unreachable);
}

std::size_t LimiterCore::partition_of(const std::string &key) const { return detail::partition_of(key, pools_.size()); }

void LimiterCore::require_connection(pqxx::transaction_base &tx, const std::vector<std::string> &keys,
                                     const std::vector<std::string> &limits, const char *what) const {
    require_utf8(tx.conn(), keys, "key", what);
    require_utf8(tx.conn(), limits, "limit name", what);
    if (pools_.size() == 1 || keys.empty()) return;
    const std::size_t partition = partition_of(keys[0]);
    for (const std::string &key : keys)
        if (partition_of(key) != partition)
            throw WrongPartition(std::string("pg_ratelimit: ") + what + " runs on one server, and its keys (" +
                                 key_list(keys) + ") belong to several partitions (Limiter::partition_of)");
    std::string scope;
    {
        const std::lock_guard<std::mutex> guard(scopes_mutex_);
        scope = scopes_[partition];
    }
    if (scope.empty()) {
        (void)pools_[partition]->acquire();  // the partition was down when the Limiter was made: connect now
        const std::lock_guard<std::mutex> guard(scopes_mutex_);
        scope = scopes_[partition];
    }
    if (database_scope(tx.conn()) != scope)
        throw WrongPartition(std::string("pg_ratelimit: ") + what + " on key \"" + keys[0] +
                             "\" belongs on partition " + std::to_string(partition) + " (Options::partitions[" +
                             std::to_string(partition) +
                             "]), and the transaction's connection is to another server or database: open it "
                             "with that partition's connection string");
}

Decision LimiterCore::pooled(Call call, const CallArgs &args) {
    const PooledCall described{function_name(call), read_only(call), [&] { return requests_of(call, args); }};
    Decision decision;
    run_pooled(*pools_[partition_of(args.key)], described, [&](pqxx::transaction_base &tx, Registered &registered) {
        decision = statements_.run_prepared(tx, registered, call, args);
        if (!returns_nothing(call))
            decision.policy = policies_.get(database_scope(tx.conn()), args.limit, args.key,
                                            [&] { return statements_.policy_prepared(tx, args.limit, args.key); });
    });
    return decision;
}

Decision LimiterCore::in_transaction(pqxx::transaction_base &tx, Call call, const CallArgs &args) {
    require_connection(tx, {args.key}, {args.limit}, function_name(call));
    Decision decision = statements_.run_unprepared(tx, call, args);
    // On a miss, the policy is read in the caller's transaction, the only connection this thread may
    // use without waiting for the pool (a pooled connection could be busy behind a row lock tx holds), and
    // the only one on tx's database, which may not be the pool's: the cache keeps it apart (its scope).
    if (!returns_nothing(call))
        decision.policy = policies_.get(database_scope(tx.conn()), args.limit, args.key,
                                        [&] { return statements_.policy_unprepared(tx, args.limit, args.key); });
    return decision;
}

std::vector<Decision> LimiterCore::pooled_many(const BatchArgs &args, std::size_t partition) {
    const PooledCall described{"rate_limit_request_many", false, [&] { return requests_of(args); }};
    std::vector<Decision> decisions;
    run_pooled(*pools_[partition], described, [&](pqxx::transaction_base &tx, Registered &registered) {
        decisions = statements_.run_many_prepared(tx, registered, args);
        const std::string scope = database_scope(tx.conn());
        // Each key's own policy: one read for a limit without overrides, one per key not cached otherwise.
        for (std::size_t i = 0; i < decisions.size(); ++i)
            decisions[i].policy = policies_.get(scope, args.limit, args.keys[i], [&] {
                return statements_.policy_prepared(tx, args.limit, args.keys[i]);
            });
    });
    return decisions;
}

std::vector<Decision> LimiterCore::in_transaction_many(pqxx::transaction_base &tx, const BatchArgs &args) {
    require_connection(tx, args.keys, {args.limit}, "rate_limit_request_many in a transaction");
    std::vector<Decision> decisions = statements_.run_many_unprepared(tx, args);
    const std::string scope = database_scope(tx.conn());
    for (std::size_t i = 0; i < decisions.size(); ++i)
        decisions[i].policy = policies_.get(scope, args.limit, args.keys[i], [&] {
            return statements_.policy_unprepared(tx, args.limit, args.keys[i]);
        });
    return decisions;
}

namespace {

std::vector<std::string> keys_of(const std::vector<LimitRequest> &requests) {
    std::vector<std::string> keys;
    keys.reserve(requests.size());
    for (const LimitRequest &request : requests) keys.push_back(request.key);
    return keys;
}

}  // namespace

AllDecision LimiterCore::pooled_all(const AllArgs &args) {
    const std::size_t partition = partition_of(args.requests[0].key);
    for (const LimitRequest &request : args.requests)
        if (partition_of(request.key) != partition)
            throw WrongPartition(
                "pg_ratelimit: rate_limit_request_all decides all or nothing on one server, and "
                "its keys (" +
                key_list(keys_of(args.requests)) +
                ") belong to several partitions (Limiter::partition_of): choose keys of one "
                "partition, or call request() per partition without the all-or-nothing");
    const PooledCall described{"rate_limit_request_all", false, [&] { return args.requests; }};
    AllDecision all;
    run_pooled(*pools_[partition], described, [&](pqxx::transaction_base &tx, Registered &registered) {
        all = statements_.run_all_prepared(tx, registered, args);
        const std::string scope = database_scope(tx.conn());
        for (std::size_t i = 0; i < all.decisions.size(); ++i) {
            const LimitRequest &request = args.requests[i];
            all.decisions[i].policy = policies_.get(scope, request.limit, request.key, [&] {
                return statements_.policy_prepared(tx, request.limit, request.key);
            });
        }
    });
    return all;
}

AllDecision LimiterCore::in_transaction_all(pqxx::transaction_base &tx, const AllArgs &args) {
    require_connection(tx, keys_of(args.requests), limits_of(args.requests), "rate_limit_request_all");
    AllDecision all = statements_.run_all_unprepared(tx, args);
    const std::string scope = database_scope(tx.conn());
    for (std::size_t i = 0; i < all.decisions.size(); ++i) {
        const LimitRequest &request = args.requests[i];
        all.decisions[i].policy = policies_.get(scope, request.limit, request.key, [&] {
            return statements_.policy_unprepared(tx, request.limit, request.key);
        });
    }
    return all;
}

RetryStats LimiterCore::stats() const {
    RetryStats stats;
    stats.retries = counters_.retries.load();
    stats.serialization_failures = counters_.serialization_failures.load();
    stats.deadlocks = counters_.deadlocks.load();
    stats.connections_lost = counters_.connections_lost.load();
    stats.exhausted = counters_.exhausted.load();
    stats.in_doubt = counters_.in_doubt.load();
    return stats;
}

}  // namespace pg_ratelimit::detail
