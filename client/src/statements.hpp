// The SQL the client sends: one statement per call, the rate_limit_* function alone, and the read of a
// limit's definition for the policy cache. Intervals are read as seconds (extract(epoch ...)), never as
// interval text, whose format depends on the session's IntervalStyle.
#pragma once

#include <cstdint>
#include <optional>
#include <pqxx/transaction_base>
#include <string>
#include <vector>

#include "pg_ratelimit/all_decision.hpp"
#include "pg_ratelimit/decision.hpp"
#include "policy_cache.hpp"
#include "pqxx_compat.hpp"

namespace pg_ratelimit::detail {

// enforce: rate_limit_enforce (no decision: a denial is RateLimitExceeded); settle: rate_limit_settle
// (cost = reserved, actual = actual); reserve: rate_limit_reserve (a reservation due within max_wait).
enum class Call { request, check, refund, reset, enforce, settle, reserve };
inline constexpr int CALL_COUNT = 7;

struct CallArgs {
    const std::string &key;
    const std::string &limit;
    double cost = 1;
    bool reserve = false;  // request only
    double actual = 0;     // settle only
    // reserve only: the bound in microseconds (from 0); none: no bound (NULL).
    std::optional<std::int64_t> max_wait{};
};

// A batch (rate_limit_request_many): the keys and the limit as given, and the parameters encoded once
// for every attempt (array_params.hpp). costs absent: NULL, every key costs 1.
struct BatchArgs {
    const std::vector<std::string> &keys;
    const std::string &limit;
    compat::BinaryParam keys_param;
    std::optional<compat::BinaryParam> costs_param{};
    const std::vector<double> *costs = nullptr;  // as given (for InDoubt::requests()); null: every key costs 1
};

// rate_limit_request_all's call: the requests as given, and the three array parameters encoded once for
// every attempt.
struct AllArgs {
    const std::vector<LimitRequest> &requests;
    compat::BinaryParam keys_param;
    compat::BinaryParam limits_param;
    compat::BinaryParam costs_param;
};

// check writes nothing: it may run in autocommit mode and be retried after any lost connection. Every other
// call changes a key (reset too: run twice, it would also erase what others consumed in between), so it runs
// in an explicit transaction and is retried only when it cannot have taken effect (run_pooled.cpp).
constexpr bool read_only(Call call) noexcept { return call == Call::check; }

// The server function a call runs (for InDoubt::call()).
const char *function_name(Call call) noexcept;

// Calls that return no decision row.
constexpr bool returns_nothing(Call call) noexcept { return call == Call::reset || call == Call::enforce; }

// Which of the statements registered on first use a pooled connection has registered so far (a bit per
// statement, Statements' own); kept with the connection by the pool, 0 for a new connection.
using Registered = std::uint32_t;

class Statements {
  public:
    // schema: where the extension lives; empty for the search_path.
    explicit Statements(const std::string &schema);

    // Prepares the statements of request, check, refund, reset and the policy read on a new connection
    // and registers them with the server now, so a database without the extension fails when the
    // connection is opened, not on first use. The others (enforce, settle, reserve, request_many,
    // request_all) are registered on the connection by their first use there (`registered` tells which
    // already are), in the call's transaction: so a connection costs no round trip for calls it never
    // makes, and a Limiter on an installation without one of their functions (a schema of wrappers that
    // lacks rate_limit_request_many, an extension older than rate_limit_reserve) serves every other call;
    // that call alone throws ExtensionMissing.
    void prepare_on(compat::Connection &connection) const;

    // Runs call in tx through the prepared statement (tx must be on a connection prepare_on ran on, whose
    // registered statements `registered` tells). The decision's policy is left empty: it comes from the
    // PolicyCache.
    Decision run_prepared(pqxx::transaction_base &tx, Registered &registered, Call call, const CallArgs &args) const;

    // Runs call in tx as a one-off parameterized statement: for the caller's connections, which are
    // none of ours and whose prepared-statement namespace we leave alone. Same result.
    Decision run_unprepared(pqxx::transaction_base &tx, Call call, const CallArgs &args) const;

    // rate_limit_request_many in tx, prepared or one-off as above: decisions[i] for keys[i]
    // (decision_rows.hpp checks the rows against the keys), policies left empty.
    std::vector<Decision> run_many_prepared(pqxx::transaction_base &tx, Registered &registered,
                                            const BatchArgs &args) const;
    std::vector<Decision> run_many_unprepared(pqxx::transaction_base &tx, const BatchArgs &args) const;

    // rate_limit_request_all in tx, prepared or one-off as above (all_rows.hpp checks the rows against the
    // requests), policies left empty.
    AllDecision run_all_prepared(pqxx::transaction_base &tx, Registered &registered, const AllArgs &args) const;
    AllDecision run_all_unprepared(pqxx::transaction_base &tx, const AllArgs &args) const;

    // The key's rate, period and capacity under the limit (its override, if it has one:
    // rate_limit_policy), and whether the limit has any override, as tx sees them; no policy without a
    // visible row of the limit. Prepared, or one-off on the caller's connections, as above.
    PolicyRead policy_prepared(pqxx::transaction_base &tx, const std::string &limit, const std::string &key) const;
    PolicyRead policy_unprepared(pqxx::transaction_base &tx, const std::string &limit, const std::string &key) const;

    // Whether every one of limits keeps its keys' state in a table (storage durable or unlogged, as tx sees
    // rate_limit_config now), so that a transaction which never committed has left no trace of a call on
    // them. False when one is memory, absent (dropped) or of a storage this client does not know. A
    // one-off statement: it only runs after a lost connection.
    bool table_storage(pqxx::transaction_base &tx, const std::vector<std::string> &limits) const;

  private:
    // Registers statement `name` (its bit in Registered: `bit`) on tx's connection unless already there.
    static void register_once(pqxx::transaction_base &tx, Registered &registered, Registered bit, const char *name,
                              const std::string &sql);

    std::string sql_[CALL_COUNT];  // by Call
    std::string many_sql_;
    std::string all_sql_;
    std::string policy_sql_;
    std::string storage_sql_;
};

}  // namespace pg_ratelimit::detail
