#include "limiter_core.hpp"

#include <pqxx/nontransaction>
#include <string>
#include <utility>

#include "database_scope.hpp"
#include "pqxx_compat.hpp"

namespace pg_ratelimit::detail {
namespace {

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

}  // namespace

LimiterCore::LimiterCore(const std::string &conninfo, Options options)
    : options_(std::move(options)),
      statements_(options_.schema),
      policies_(options_.policy_ttl, options_.policy_keys),
      pool_(conninfo, options_.pool_size, options_.acquire_timeout, [this](pqxx::connection &connection) {
          // The session default, so that BEGIN alone starts a transaction at the configured level.
          pqxx::nontransaction setup{connection};
          compat::exec0(setup, std::string("SET SESSION CHARACTERISTICS AS TRANSACTION ISOLATION LEVEL ") +
                                   isolation_sql(options_.level));
          statements_.prepare_on(connection);
      }) {}

Decision LimiterCore::pooled(Call call, const CallArgs &args) {
    const PooledCall described{function_name(call), read_only(call), [&] { return requests_of(call, args); }};
    Decision decision;
    run_pooled(described, [&](pqxx::transaction_base &tx, Registered &registered) {
        decision = statements_.run_prepared(tx, registered, call, args);
        if (!returns_nothing(call))
            decision.policy = policies_.get(database_scope(tx.conn()), args.limit, args.key,
                                            [&] { return statements_.policy_prepared(tx, args.limit, args.key); });
    });
    return decision;
}

Decision LimiterCore::in_transaction(pqxx::transaction_base &tx, Call call, const CallArgs &args) {
    Decision decision = statements_.run_unprepared(tx, call, args);
    // On a miss, the policy is read in the caller's transaction, the only connection this thread may
    // use without waiting for the pool (a pooled connection could be busy behind a row lock tx holds), and
    // the only one on tx's database, which may not be the pool's: the cache keeps it apart (its scope).
    if (!returns_nothing(call))
        decision.policy = policies_.get(database_scope(tx.conn()), args.limit, args.key,
                                        [&] { return statements_.policy_unprepared(tx, args.limit, args.key); });
    return decision;
}

std::vector<Decision> LimiterCore::pooled_many(const BatchArgs &args) {
    const PooledCall described{"rate_limit_request_many", false, [&] { return requests_of(args); }};
    std::vector<Decision> decisions;
    run_pooled(described, [&](pqxx::transaction_base &tx, Registered &registered) {
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
    std::vector<Decision> decisions = statements_.run_many_unprepared(tx, args);
    const std::string scope = database_scope(tx.conn());
    for (std::size_t i = 0; i < decisions.size(); ++i)
        decisions[i].policy = policies_.get(scope, args.limit, args.keys[i], [&] {
            return statements_.policy_unprepared(tx, args.limit, args.keys[i]);
        });
    return decisions;
}

AllDecision LimiterCore::pooled_all(const AllArgs &args) {
    const PooledCall described{"rate_limit_request_all", false, [&] { return args.requests; }};
    AllDecision all;
    run_pooled(described, [&](pqxx::transaction_base &tx, Registered &registered) {
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
