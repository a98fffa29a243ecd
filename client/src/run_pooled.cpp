// LimiterCore::run_pooled: a pooled call's transaction, its retries, and the rule that a call whose effect
// may already have happened never runs again (InDoubt instead).
//
// A connection can break at three moments of an attempt, and they differ in what the server may have done:
// - before the call's statement was sent (BEGIN on a pooled connection whose backend is gone): nothing;
//   retried.
// - after the statement was sent, before COMMIT was: the transaction never commits, so a limit whose state
//   lives in a table (durable, unlogged) was rolled back; but a memory limit's decision took effect when the
//   statement ran (memory storage is not transactional). Before running the call again, the next attempt
//   reads the limits' storage on its new connection, in its own transaction: all in tables, it goes on;
//   otherwise InDoubt. The storage is read then, not taken from the policy cache, which may be up to
//   policy_ttl old: a limit redefined from durable to memory meanwhile would otherwise be applied twice.
//   Reading it after the loss is sound: if the lost statement ran under memory storage and the limit is
//   now in a table, the change to a table storage (rate_limit_define or an UPDATE of the row) emptied the
//   limit's memory entries when it committed (config_triggers.cpp), so that effect no longer counts.
// - during COMMIT: it may have committed (libpqxx's in_doubt_error); InDoubt, never retried.
// "Sent" is conservative: a statement that libpq failed to send at all counts as sent.
#include <exception>
#include <optional>
#include <pqxx/except>
#include <pqxx/nontransaction>
#include <pqxx/transaction>
#include <string>
#include <unordered_set>

#include "limiter_core.hpp"
#include "pg_ratelimit/errors.hpp"

namespace pg_ratelimit::detail {
namespace {

InDoubt in_doubt(const PooledCall &call, const std::string &why) {
    return InDoubt(call.function, call.requests(),
                   std::string("pg_ratelimit: ") + call.function +
                       " may have taken effect, so it was not run again (that could apply it twice): " + why);
}

}  // namespace

std::vector<std::string> limits_of(const std::vector<LimitRequest> &requests) {
    std::vector<std::string> limits;
    std::unordered_set<std::string> seen;
    for (const LimitRequest &request : requests)
        if (seen.insert(request.limit).second) limits.push_back(request.limit);
    return limits;
}

void LimiterCore::run_pooled(Pool &pool, const PooledCall &call,
                             const std::function<void(pqxx::transaction_base &, Registered &)> &body) {
    const auto on_connection_lost = [&pool] { pool.drop_idle(); };
    if (call.read_only) {
        retry_loop(
            options_.retry, &counters_,
            [&] {
                const Pool::Lease lease = pool.acquire();  // declared first: outlives the transaction
                pqxx::nontransaction tx{lease.connection()};
                body(tx, lease.marks());
            },
            on_connection_lost);
        return;
    }
    // Set when an attempt lost its connection after its statement was sent: what libpqxx said. While set,
    // the call must not run again unless a new connection shows every one of its limits stored in a table.
    std::optional<std::string> lost_after_sending;
    try {
        retry_loop(
            options_.retry, &counters_,
            [&] {
                const Pool::Lease lease = pool.acquire();
                bool sent = false;
                try {
                    // An explicit transaction, not autocommit: a connection lost before COMMIT then leaves a
                    // table-stored limit untouched. A policy read on a cache miss runs in it too, before
                    // COMMIT, so that its failure is handled like the statement's.
                    pqxx::work tx{lease.connection()};
                    if (lost_after_sending) {
                        if (!statements_.table_storage(tx, limits_of(call.requests())))
                            throw in_doubt(call, "the connection was lost after its statement was sent (" +
                                                     *lost_after_sending +
                                                     "), and a limit of the call keeps its state in memory (or "
                                                     "in no storage the client knows): that does not roll back");
                        lost_after_sending.reset();  // the lost transaction rolled back: nothing was applied
                    }
                    sent = true;
                    body(tx, lease.marks());
                    tx.commit();
                } catch (const InDoubt &) {
                    throw;
                } catch (const pqxx::in_doubt_error &error) {
                    throw in_doubt(call, std::string("the connection was lost during COMMIT (") + error.what() + ")");
                } catch (const pqxx::broken_connection &error) {
                    if (sent) lost_after_sending = error.what();
                    throw;  // retried by retry_loop; the next attempt checks the storage first
                }
            },
            on_connection_lost);
    } catch (const InDoubt &) {
        ++counters_.in_doubt;
        throw;
    } catch (const std::exception &error) {
        if (!lost_after_sending) throw;
        // Gave up (retries exhausted, PoolTimeout, the storage read failed, ...) before the storage could
        // clear the lost statement: the caller must not take it for a call that did nothing.
        ++counters_.in_doubt;
        throw in_doubt(call, "the connection was lost after its statement was sent (" + *lost_after_sending +
                                 "), and its limits' storage could not be read before giving up (" + error.what() +
                                 ")");
    }
}

}  // namespace pg_ratelimit::detail
