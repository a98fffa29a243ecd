#include "limiter_core.hpp"

#include <pqxx/nontransaction>
#include <pqxx/transaction>
#include <utility>

namespace pg_ratelimit::detail {

LimiterCore::LimiterCore(const std::string &conninfo, Options options)
    : options_(std::move(options)),
      statements_(options_.schema),
      policies_(options_.policy_ttl, options_.policy_keys),
      pool_(conninfo, options_.pool_size, options_.acquire_timeout, [this](pqxx::connection &connection) {
          // The session default, so that BEGIN alone starts a transaction at the configured level.
          pqxx::nontransaction setup{connection};
          setup.exec0(std::string("SET SESSION CHARACTERISTICS AS TRANSACTION ISOLATION LEVEL ") +
                      isolation_sql(options_.level));
          statements_.prepare_on(connection);
      }) {}

void LimiterCore::run_pooled(bool idempotent_call, const std::function<void(pqxx::transaction_base &)> &body) {
    retry_loop(
        options_.retry, &counters_,
        [&] {
            const Pool::Lease lease = pool_.acquire();  // declared first: outlives the transaction
            if (idempotent_call) {
                pqxx::nontransaction tx{lease.connection()};
                body(tx);
            } else {
                // An explicit transaction, not autocommit: a connection lost before COMMIT is then
                // known not to have consumed anything, and only a loss during COMMIT is in doubt. A
                // policy read on a cache miss runs in it too, before COMMIT, so that its failure is
                // retried like any other and never hides a committed decision.
                pqxx::work tx{lease.connection()};
                body(tx);
                tx.commit();
            }
        },
        [this] { pool_.drop_idle(); });
}

Decision LimiterCore::pooled(Call call, const CallArgs &args) {
    Decision decision;
    run_pooled(idempotent(call), [&](pqxx::transaction_base &tx) {
        decision = statements_.run_prepared(tx, call, args);
        if (!returns_nothing(call))
            decision.policy = policies_.get(args.limit, args.key,
                                            [&] { return statements_.policy_prepared(tx, args.limit, args.key); });
    });
    return decision;
}

Decision LimiterCore::in_transaction(pqxx::transaction_base &tx, Call call, const CallArgs &args) {
    Decision decision = statements_.run_unprepared(tx, call, args);
    // On a miss, the policy is read in the caller's transaction, the only connection this thread may
    // use without waiting for the pool (a pooled connection could be busy behind a row lock tx holds).
    if (!returns_nothing(call))
        decision.policy = policies_.get(args.limit, args.key,
                                        [&] { return statements_.policy_unprepared(tx, args.limit, args.key); });
    return decision;
}

std::vector<Decision> LimiterCore::pooled_many(const BatchArgs &args) {
    std::vector<Decision> decisions;
    // Not idempotent: an explicit transaction, as for request().
    run_pooled(false, [&](pqxx::transaction_base &tx) {
        decisions = statements_.run_many_prepared(tx, args);
        // Each key's own policy: one read for a limit without overrides, one per key not cached otherwise.
        for (std::size_t i = 0; i < decisions.size(); ++i)
            decisions[i].policy = policies_.get(
                args.limit, args.keys[i], [&] { return statements_.policy_prepared(tx, args.limit, args.keys[i]); });
    });
    return decisions;
}

std::vector<Decision> LimiterCore::in_transaction_many(pqxx::transaction_base &tx, const BatchArgs &args) {
    std::vector<Decision> decisions = statements_.run_many_unprepared(tx, args);
    for (std::size_t i = 0; i < decisions.size(); ++i)
        decisions[i].policy = policies_.get(
            args.limit, args.keys[i], [&] { return statements_.policy_unprepared(tx, args.limit, args.keys[i]); });
    return decisions;
}

AllDecision LimiterCore::pooled_all(const AllArgs &args) {
    AllDecision all;
    run_pooled(false, [&](pqxx::transaction_base &tx) {
        all = statements_.run_all_prepared(tx, args);
        for (std::size_t i = 0; i < all.decisions.size(); ++i) {
            const LimitRequest &request = args.requests[i];
            all.decisions[i].policy = policies_.get(request.limit, request.key, [&] {
                return statements_.policy_prepared(tx, request.limit, request.key);
            });
        }
    });
    return all;
}

AllDecision LimiterCore::in_transaction_all(pqxx::transaction_base &tx, const AllArgs &args) {
    AllDecision all = statements_.run_all_unprepared(tx, args);
    for (std::size_t i = 0; i < all.decisions.size(); ++i) {
        const LimitRequest &request = args.requests[i];
        all.decisions[i].policy = policies_.get(
            request.limit, request.key, [&] { return statements_.policy_unprepared(tx, request.limit, request.key); });
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
    return stats;
}

}  // namespace pg_ratelimit::detail
