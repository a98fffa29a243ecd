// The rate limiter: pg_ratelimit's SQL API from C++, on a small pool of libpqxx connections.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <pqxx/transaction_base>
#include <string>
#include <vector>

#include "pg_ratelimit/all_decision.hpp"
#include "pg_ratelimit/decision.hpp"
#include "pg_ratelimit/lease.hpp"
#include "pg_ratelimit/reservation.hpp"
#include "pg_ratelimit/retry.hpp"

namespace pg_ratelimit {

namespace detail {
class LimiterCore;
}

struct Options {
    // Connections the Limiter opens at most (lazily; the first at construction; 0 counts as 1). Calls
    // beyond that wait for a free one, up to acquire_timeout, then throw PoolTimeout.
    std::size_t pool_size = 4;
    std::chrono::milliseconds acquire_timeout{5000};
    // Isolation level of the Limiter's own transactions. READ COMMITTED lets the server settle
    // concurrent callers of one key by itself; at the other levels (or on YugabyteDB) they conflict
    // with 40001, which `retry` absorbs.
    isolation level = isolation::read_committed;
    // Schema pg_ratelimit is installed in; empty: found through the connection's search_path.
    std::string schema{};
    // Retries of the pooled calls (the in-transaction calls never retry; see run_transaction).
    RetryPolicy retry{};
    // How long a limit's definition (Decision::policy, for the RateLimit-Policy field) is reused before
    // it is read from rate_limit_config again. Calls send the rate_limit_* function alone; the Limiter
    // reads a limit's row the first time a call on that limit succeeds, and again after this long, in
    // the same transaction as that call. So a redefined limit shows in decisions within policy_ttl
    // (allowed, remaining and the other figures come from the server on every call and are never
    // stale). 0 reads the row on every call. Kept per database the calls run in (host, port and database
    // name of the connection: the pool's, or the caller's transaction's), so a Limiter serving a database
    // per tenant gives each decision its own database's policy.
    std::chrono::milliseconds policy_ttl{30000};
    // Per-key tiers (rate_limit_override): a limit with overrides has a policy per key, read per key and
    // kept for policy_ttl like a limit's, for at most this many keys per Limiter (beyond, the expired ones
    // are dropped, then all). Limits without overrides take one entry whatever the number of keys.
    std::size_t policy_keys = 10000;
    // Keys spread over several servers (docs/scale-out.md): the libpq connection strings of 2, 4, 8...
    // partitions, each running pg_ratelimit with the same limits. Each call goes to the partition of its
    // key, hashtext(key) & (N - 1) over the key's bytes, as PL/Proxy's proxy (proxy/pg_ratelimit_proxy.sql)
    // routes it, on a pool of its own (pool_size connections at most per partition). request_many splits its
    // keys by partition and puts the decisions back in the order given; request_all and the in-transaction
    // calls need one partition (WrongPartition otherwise). Each partition's database must be UTF8 (or
    // SQL_ASCII), so that hashtext there hashes the bytes the client hashes: another encoding is refused
    // (WrongPartition) when its first connection is made. Empty: the one server of the Limiter's conninfo;
    // with partitions that conninfo must be empty.
    std::vector<std::string> partitions{};
};

// Cumulative counters of the pooled calls' retry loops (run_transaction reports through
// RetryPolicy::on_retry instead).
struct RetryStats {
    std::uint64_t retries = 0;                 // attempts run again, all reasons
    std::uint64_t serialization_failures = 0;  // 40001 seen (retried or not)
    std::uint64_t deadlocks = 0;               // 40P01 seen
    std::uint64_t connections_lost = 0;        // lost connections seen; the next attempt used a new one
    std::uint64_t exhausted = 0;               // calls that gave up and threw after the last attempt
    std::uint64_t in_doubt = 0;                // calls that threw InDoubt (their effect may have happened)
};

// Thread-safe: any number of threads may call any member at once (the pool hands each call its own
// connection; libpqxx connections themselves are not thread-safe). Move-only; a moved-from Limiter may
// only be destroyed or assigned to.
//
// Two kinds of calls:
// - Pooled (no transaction argument): one short transaction of their own on a pooled connection,
//   committed before returning, retried on 40001/40P01 (the server rolled the attempt back) per
//   Options::retry. A lost connection is retried only when the call cannot have taken effect: it broke
//   before the call's statement was sent (a pooled connection whose backend died while idle, found by
//   BEGIN), or before COMMIT while every limit of the call keeps its state in a table (durable or
//   unlogged: the uncommitted transaction rolled back; the Limiter reads the limits' storage on a new
//   connection before running the call again). Otherwise the call throws InDoubt (errors.hpp) and is
//   never run twice: when the connection broke during COMMIT, or after the statement was sent to a limit
//   with storage => 'memory', whose decisions take effect when the statement runs, whatever becomes of
//   the transaction. check() writes nothing: one autocommit statement, retried after any lost connection.
// - In-transaction (first argument pqxx::transaction_base &tx): one statement inside the caller's
//   transaction (any libpqxx transaction type, on any connection: not one of the pool's), so the rate
//   limit commits or rolls back with the caller's own writes. They NEVER retry (that must wrap the
//   whole transaction: see run_transaction); after one throws, tx is aborted, as after any failed
//   statement. tx is used from the calling thread only, as libpqxx requires. They send a one-off
//   parameterized statement rather than a prepared one, leaving the caller's connection untouched
//   (no named prepared statements are left on it). When the Limiter's policy cache has no fresh entry
//   for the limit (see Options::policy_ttl), a one-off read of the limit's row in rate_limit_config
//   follows in the same transaction.
//
// Every call throws: InvalidArgument or UnknownLimit for bad input (with the server's SQLSTATE and
// message); ExtensionMissing when pg_ratelimit is not found (for the in-transaction calls: in tx's
// database); pqxx::broken_connection, pqxx::serialization_failure or pqxx::deadlock_detected when the
// pooled retries are exhausted (in-transaction: at once); InDoubt (a pqxx::in_doubt_error) as said above,
// also when the retries run out (or PoolTimeout strikes) while a lost statement's effect is still unsettled;
// PoolTimeout when no pooled connection became free in time; other pqxx exceptions unchanged.
//
// Memory limits inside run_transaction: run_transaction runs the whole function again after 40001, 40P01
// or a lost connection, and a memory limit's decision does not roll back with the failed attempt, so a
// call on one inside the function is applied once per attempt (a request consumes again, a refund gives
// back again). Use durable or unlogged storage for limits called inside transactions that may be retried,
// or call a memory limit outside the function (a pooled call before or after it; its InDoubt rule then
// applies), not inside it.
class Limiter {
  public:
    // conninfo: a libpq connection string ("" uses the PG* environment variables). Opens the first
    // pooled connection and prepares the statements on it, so a bad conninfo or a database without
    // the extension, or with it in a schema the client does not look in, fails here
    // (pqxx::broken_connection, ExtensionMissing). Keys, limit names and schema are UTF-8: the pooled
    // connections use client_encoding UTF8 whatever conninfo or PGCLIENTENCODING say, so that a key is the
    // same key for SQL callers and the same partition as PL/Proxy's. The in-transaction calls use tx's
    // connection as it is, and refuse a key or limit name that is not ASCII (InvalidArgument, 22021,
    // nothing sent) when its client_encoding is neither UTF8 nor SQL_ASCII: the server would convert its
    // bytes into other characters (put client_encoding=UTF8 in that connection's conninfo).
    explicit Limiter(const std::string &conninfo, Options options = Options{});
    ~Limiter();
    Limiter(Limiter &&) noexcept;
    Limiter &operator=(Limiter &&) noexcept;
    Limiter(const Limiter &) = delete;
    Limiter &operator=(const Limiter &) = delete;

    // Consumes cost units of `limit` for `key` if they are available (rate_limit_request).
    [[nodiscard]] Decision request(const std::string &key, const std::string &limit = "default", double cost = 1);
    [[nodiscard]] Decision request(pqxx::transaction_base &tx, const std::string &key,
                                   const std::string &limit = "default", double cost = 1);

    // request() that throws instead of returning a denial (rate_limit_enforce): returns once the units are
    // consumed; throws RateLimitExceeded (SQLSTATE RL001, carrying retry_after, limit and key) when denied.
    // Pooled: one transaction, retried on 40001/40P01 like request() (a denial is not retried). In
    // a transaction: the denial aborts tx, so everything it consumed before rolls back with it. A limit
    // in shadow mode never throws: the server sends a NOTICE (SQLSTATE RL001) for each call it would have
    // refused, and counts it in rate_limit_stats.
    void enforce(const std::string &key, const std::string &limit = "default", double cost = 1);
    void enforce(pqxx::transaction_base &tx, const std::string &key, const std::string &limit = "default",
                 double cost = 1);

    // request() for each key in turn, in one statement (rate_limit_request_many): decisions[i] is keys[i]'s,
    // as request() would have returned it (limit and policy filled in). A key given twice is decided
    // twice, in turn: the second decision sees the first's consumption. costs[i] is keys[i]'s cost; without
    // costs every key costs 1.
    // - All or nothing on bad input: the server checks every key and cost before deciding any, so a bad
    //   one (a cost above the capacity, a key over 1024 bytes, ...) throws and consumes nothing, for any
    //   storage mode. A key with a NUL byte throws InvalidArgument (22021) before anything is sent.
    // - costs.size() != keys.size() throws std::invalid_argument before anything is sent: two vectors
    //   out of step are a programming error, not bad input.
    // - An empty keys returns an empty vector at once, without contacting the server (so it does not
    //   check that the limit exists either).
    // - With Options::partitions, the pooled overloads send each partition its keys (one call per partition,
    //   in partition order): not all or nothing across partitions, so a call that fails on one partition
    //   leaves the decisions made on the partitions before it in force (a memory limit's too); the
    //   in-transaction overloads need every key on tx's partition (WrongPartition).
    // - The keys' state rows are updated, and locked until the transaction ends, in the order given:
    //   concurrent batches naming the same keys in different orders can deadlock (40P01: retried by the
    //   pooled overloads, thrown by the in-transaction ones). Give keys in a consistent order (sorted,
    //   say) when batches overlap.
    // Keys travel as one binary text[] parameter: commas, quotes, braces, backslashes, "NULL", empty
    // strings and non-ASCII arrive as given; the client checks that every row's key is the one sent
    // (std::runtime_error otherwise, never expected). Pooled: one transaction, retried like request();
    // in-transaction: one statement, never retried.
    [[nodiscard]] std::vector<Decision> request_many(const std::vector<std::string> &keys,
                                                     const std::string &limit = "default");
    [[nodiscard]] std::vector<Decision> request_many(const std::vector<std::string> &keys, const std::string &limit,
                                                     const std::vector<double> &costs);
    [[nodiscard]] std::vector<Decision> request_many(pqxx::transaction_base &tx, const std::vector<std::string> &keys,
                                                     const std::string &limit = "default");
    [[nodiscard]] std::vector<Decision> request_many(pqxx::transaction_base &tx, const std::vector<std::string> &keys,
                                                     const std::string &limit, const std::vector<double> &costs);

    // Several limits at once, all or nothing (rate_limit_request_all): consumes requests[i].cost units of
    // requests[i].limit for requests[i].key for every i if every one allows, and nothing anywhere otherwise
    // (for memory limits too). AllDecision::overall says which; decisions[i] is requests[i]'s.
    // - Deadlock-free whatever order concurrent callers give the requests in: the server locks the rows
    //   in one canonical order. Under REPEATABLE READ and SERIALIZABLE a concurrent consumption still
    //   raises 40001: the pooled overload retries it like request(), the in-transaction one throws.
    // - Bad input (an unknown limit, a cost above a key's capacity, a key over 1024 bytes, ...) throws
    //   before anything is consumed; a key or limit with a NUL byte throws InvalidArgument before
    //   anything is sent; an empty requests throws std::invalid_argument (all of nothing is a mistake).
    // - Every request's decision carries its limit's policy, as request()'s; the overall decision none.
    // - No reservations here; shadow limits never make the call deny.
    [[nodiscard]] AllDecision request_all(const std::vector<LimitRequest> &requests);
    [[nodiscard]] AllDecision request_all(pqxx::transaction_base &tx, const std::vector<LimitRequest> &requests);

    // The decision request() would return now, consuming nothing and writing nothing
    // (rate_limit_check); so `remaining` is what such a request would leave.
    [[nodiscard]] Decision check(const std::string &key, const std::string &limit = "default", double cost = 1);
    [[nodiscard]] Decision check(pqxx::transaction_base &tx, const std::string &key,
                                 const std::string &limit = "default", double cost = 1);

    // Gives cost units back to key, never above capacity (rate_limit_refund). The decision is the key's
    // state afterwards (allowed is always true).
    Decision refund(const std::string &key, const std::string &limit = "default", double cost = 1);
    Decision refund(pqxx::transaction_base &tx, const std::string &key, const std::string &limit = "default",
                    double cost = 1);

    // The key starts over at full capacity (rate_limit_reset).
    void reset(const std::string &key, const std::string &limit = "default");
    void reset(pqxx::transaction_base &tx, const std::string &key, const std::string &limit = "default");

    // Consumes now, refundable with Reservation::cancel(). See reservation.hpp, in particular for
    // reservations made inside a transaction.
    [[nodiscard]] Reservation reserve(const std::string &key, const std::string &limit = "default", double cost = 1,
                                      ReserveMode mode = ReserveMode::immediate);
    [[nodiscard]] Reservation reserve(pqxx::transaction_base &tx, const std::string &key,
                                      const std::string &limit = "default", double cost = 1,
                                      ReserveMode mode = ReserveMode::immediate);

    // A reservation bounded in time (rate_limit_reserve; needs the extension at 0.2.0 or later, else
    // ExtensionMissing): takes cost units only if they are due within max_wait, within the limit's
    // max_reserved. Allowed: the units are taken, and retry_after (at most max_wait) is how long to wait
    // before doing the work. Denied: NOTHING was taken or written, and retry_after is how long until a
    // reservation with the same max_wait would be granted if nobody else takes units meanwhile. So a
    // caller that gives up has nothing to give back (no grant on rate_limit_refund needed). For callers
    // that schedule the work themselves (an event loop); wait() is this plus the sleeping. max_wait of 0:
    // only units available now (a request); of 100,000 years or more: no bound; negative: InvalidArgument.
    [[nodiscard]] Decision reserve_within(const std::string &key, const std::string &limit,
                                          std::chrono::milliseconds max_wait, double cost = 1);
    [[nodiscard]] Decision reserve_within(pqxx::transaction_base &tx, const std::string &key, const std::string &limit,
                                          std::chrono::milliseconds max_wait, double cost = 1);

    // Throttling instead of rejecting: returns an allowed decision once the units are consumed, blocking
    // the calling thread for up to max_wait; returns a denial as soon as the request cannot succeed
    // within max_wait (at once, without writing anything, when the first answer already says so).
    //
    // Built on reserve_within (so it needs the extension at 0.2.0, and no privilege beyond the default
    // grants: it never gives units back): one call with the time left as the bound. Granted: it sleeps
    // until the units are due, so concurrent waiters queue in the order they reserved instead of waking
    // together and racing. Denied while the units will be due before the deadline (the limit's
    // max_reserved holds the reservation back): it sleeps until a reservation could be admitted (plus a
    // little jitter) and tries again with the time then left; denied when they will not (a check() tells,
    // after such a denial): it returns the denial, whose retry_after is when a wait() with the same
    // max_wait would succeed. A denied wait() has taken and written nothing. The returned allowed
    // decision's retry_after is 0. The units count as consumed from the moment they are reserved, even if
    // the thread is interrupted while sleeping. Throws as the pooled calls (InDoubt when its reservation's
    // effect is in doubt). No in-transaction variant: sleeping inside a transaction would hold the key's
    // row lock the whole time.
    [[nodiscard]] Decision wait(const std::string &key, const std::string &limit, std::chrono::milliseconds max_wait,
                                double cost = 1);

    // Concurrency limits (algorithm 'concurrency'): takes one of the key's slots if one is free
    // (rate_limit_acquire), held by tx's connection: until tx ends (LeaseScope::transaction), or until
    // release(), the connection's end or the limit's period (LeaseScope::session). In-transaction only: a
    // pooled connection's transaction would end, or its session outlive the caller's interest, at once. A
    // denial is a Lease with acquired false, never an exception; a rate limit throws WrongLimitKind (42809).
    // One-off statements, never retried, like the other in-transaction calls.
    [[nodiscard]] Lease acquire(pqxx::transaction_base &tx, const std::string &key, const std::string &limit,
                                LeaseScope scope = LeaseScope::transaction);
    // Releases a session lease tx's connection holds on (key, limit) (rate_limit_release): one tx took
    // first, else the oldest; when tx commits (a rollback undoes it: a run_transaction retry releases
    // once). False if it holds none, or if it takes the marker a session lease given back by a failed
    // transaction left (a release in a catch block then frees no other lease; README "Releasing in an
    // error path"). Transaction leases end with their transaction.
    bool release(pqxx::transaction_base &tx, const std::string &key, const std::string &limit);

    // Retry counters of the pooled calls so far.
    [[nodiscard]] RetryStats stats() const;

    // With Options::partitions: how many there are, and the one a key belongs to (an index into
    // Options::partitions), whose connection an in-transaction call on the key must run on. 1 and 0 without.
    [[nodiscard]] std::size_t partitions() const;
    [[nodiscard]] std::size_t partition_of(const std::string &key) const;

  private:
    std::shared_ptr<detail::LimiterCore> core_;
};

}  // namespace pg_ratelimit
