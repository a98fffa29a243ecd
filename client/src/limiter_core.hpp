// What a Limiter shares with the Reservations it hands out: options, statements, policy cache, pool and
// counters. Reservations hold it by shared_ptr, so a reservation can still be cancelled after its
// Limiter is gone.
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <mutex>
#include <pqxx/transaction_base>
#include <string>
#include <vector>

#include "pg_ratelimit/limiter.hpp"
#include "policy_cache.hpp"
#include "pool.hpp"
#include "pooled_call.hpp"
#include "retry_loop.hpp"
#include "statements.hpp"

namespace pg_ratelimit::detail {

class LimiterCore {
  public:
    // One pool per partition (Options::partitions), or one for conninfo.
    LimiterCore(const std::string &conninfo, Options options);

    // The number of partitions (1 without Options::partitions), and the one a key belongs to (key_hash.hpp).
    std::size_t partitions() const { return pools_.size(); }
    std::size_t partition_of(const std::string &key) const;

    // An in-transaction call runs on the caller's connection, which must name the same keys and limits as
    // the pooled calls: throws InvalidArgument (22021) when a key or limit name is not ASCII and the
    // connection's client_encoding would have the server convert its UTF-8 bytes into other characters
    // (neither UTF8 nor SQL_ASCII), and WrongPartition unless the connection is to the partition of every
    // key (with partitions). `what` names the call.
    void require_connection(pqxx::transaction_base &tx, const std::vector<std::string> &keys,
                            const std::vector<std::string> &limits, const char *what) const;

    // A call in a short transaction of its own on a pooled connection of its key's partition, retried per
    // options().retry.
    Decision pooled(Call call, const CallArgs &args);

    // A call inside the caller's transaction: one statement, never retried here (plus, when the policy
    // cache has no fresh entry for the limit, a read of rate_limit_config in the same transaction).
    Decision in_transaction(pqxx::transaction_base &tx, Call call, const CallArgs &args);

    // rate_limit_request_many, pooled (retried as a request) on `partition`, whose keys args.keys all are,
    // or in the caller's transaction (never retried); decisions[i] for args.keys[i], each with the limit's
    // policy. args.keys is not empty.
    std::vector<Decision> pooled_many(const BatchArgs &args, std::size_t partition);
    std::vector<Decision> in_transaction_many(pqxx::transaction_base &tx, const BatchArgs &args);

    // rate_limit_request_all, pooled (retried as a request) or in the caller's transaction (never retried);
    // each request's decision with its limit's policy (the overall one has none). With partitions, every
    // key must be on one (WrongPartition otherwise: all or nothing needs one server).
    AllDecision pooled_all(const AllArgs &args);
    AllDecision in_transaction_all(pqxx::transaction_base &tx, const AllArgs &args);

    RetryStats stats() const;
    const Options &options() const { return options_; }

  private:
    // Runs body in a transaction of its own on a pooled connection, retried per options().retry:
    // autocommit when the call is read-only, else an explicit transaction committed after body, run again
    // after a lost connection only when it cannot have taken effect (InDoubt otherwise: run_pooled.cpp).
    // body gets the statements registered on that connection so far (Statements::run_prepared).
    void run_pooled(Pool &pool, const PooledCall &call,
                    const std::function<void(pqxx::transaction_base &, Registered &)> &body);

    const Options options_;
    const Statements statements_;
    RetryCounters counters_;
    PolicyCache policies_;
    // Last: their constructors open a connection, which needs statements_ and options_. One per partition.
    std::vector<std::unique_ptr<Pool>> pools_;
    // The database each partition's connections reach (database_scope.hpp), for require_connection: set by
    // the partition's first connection (empty until one opened: a partition down when the Limiter was made).
    mutable std::mutex scopes_mutex_;
    std::vector<std::string> scopes_;
};

}  // namespace pg_ratelimit::detail
