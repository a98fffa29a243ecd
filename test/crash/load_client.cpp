#include "load_client.hpp"

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <pqxx/pqxx>
#include <random>
#include <thread>
#include <vector>

#include "pqxx_compat.hpp"

namespace crash {
namespace {

namespace compat = pg_ratelimit::compat;

constexpr const char *kRequestSql = "SELECT allowed FROM rate_limit_request($1, $2)";

// Back-off after failed attempt n (from 1): uniform in [0, min(100 ms, 1 ms * 2^(n-1))], the client
// library's default policy ("full jitter").
std::chrono::microseconds backoff(int attempt, std::mt19937_64 &random) {
    const long ceiling = std::min(100000L, 1000L << std::min(attempt - 1, 7));
    return std::chrono::microseconds{std::uniform_int_distribution<long>(0, ceiling)(random)};
}

enum class Failure {
    rolled_back,      // the server rolled the attempt back and the connection is fine: run it again
    connection_lost,  // the server is gone (or going: 57P01-57P03 "terminating connection ...")
};

// Called inside a catch block: what the exception in flight means. Anything else is rethrown, and ends the
// client as failed: the test must not mistake an error of the extension for the crash.
Failure classify(const compat::Connection &conn) {
    try {
        throw;
    } catch (const pqxx::broken_connection &) {
        return Failure::connection_lost;
    } catch (const pqxx::in_doubt_error &) {
        return Failure::connection_lost;
    } catch (const pqxx::serialization_failure &) {
        return conn.is_open() ? Failure::rolled_back : Failure::connection_lost;
    } catch (const pqxx::deadlock_detected &) {
        return conn.is_open() ? Failure::rolled_back : Failure::connection_lost;
    } catch (const pqxx::sql_error &error) {
        const std::string state = compat::sqlstate(error);
        if (!conn.is_open() || state.rfind("57P", 0) == 0 || state.rfind("08", 0) == 0) return Failure::connection_lost;
        throw;
    } catch (const pqxx::failure &) {
        if (!conn.is_open()) return Failure::connection_lost;
        throw;
    }
}

enum class Outcome {
    committed,    // acknowledged: allowed[] holds each request's answer
    rolled_back,  // 40001 / 40P01: nothing happened, run it again
    lost,         // the connection broke before COMMIT was sent: nothing can have been committed
    in_doubt,     // the connection broke after the statement or COMMIT was sent: committed or not
};

// An autocommit statement commits on the server before its answer is sent. Once it is sent, a broken
// connection leaves its fate unknown.
Outcome attempt_autocommit(pqxx::connection &conn, const Request &request, std::vector<char> &allowed) {
    try {
        pqxx::nontransaction tx{conn};
        allowed[0] = compat::exec_params1(tx, kRequestSql, request.key, request.limit)[0].as<bool>() ? 1 : 0;
        return Outcome::committed;
    } catch (...) {
        return classify(conn) == Failure::rolled_back ? Outcome::rolled_back : Outcome::in_doubt;
    }
}

Outcome attempt_transaction(pqxx::connection &conn, const Operation &op, std::vector<char> &allowed) {
    bool commit_sent = false;
    try {
        pqxx::work tx{conn};
        compat::exec0(tx, isolation_sql(op.kind));
        for (std::size_t i = 0; i < op.requests.size(); ++i)
            allowed[i] =
                compat::exec_params1(tx, kRequestSql, op.requests[i].key, op.requests[i].limit)[0].as<bool>() ? 1 : 0;
        commit_sent = true;
        tx.commit();
        return Outcome::committed;
    } catch (...) {
        if (classify(conn) == Failure::rolled_back) return Outcome::rolled_back;  // an error answered COMMIT
        return commit_sent ? Outcome::in_doubt : Outcome::lost;
    }
}

std::string tally_key(const Request &request) { return request.limit + '\t' + request.key; }

void record(const Operation &op, const std::vector<char> &allowed, Outcome outcome, ClientResult &result) {
    if (outcome == Outcome::committed) {
        ++result.stats.committed;
        for (std::size_t i = 0; i < op.requests.size(); ++i) {
            if (allowed[i] != 0) {
                ++result.tally[tally_key(op.requests[i])].acknowledged;
                ++result.stats.admitted;
            } else {
                ++result.stats.denied;
            }
        }
    } else if (outcome == Outcome::in_doubt) {
        // An autocommit statement's answer never came: it may have been admitted. A transaction's
        // requests were answered: only the admitted ones can have consumed.
        for (std::size_t i = 0; i < op.requests.size(); ++i) {
            if (op.kind == Kind::autocommit || allowed[i] != 0) {
                ++result.tally[tally_key(op.requests[i])].in_doubt;
                ++result.stats.in_doubt;
            }
        }
    }
}

}  // namespace

ClientResult run_client(Workload workload, const std::atomic<bool> &stop, const std::function<void()> &connected) {
    ClientResult result;
    try {
        pqxx::connection conn{""};
        // libpqxx prints the server's notices and its failed ROLLBACKs after the crash to stderr: noise.
        const compat::QuietNotices quiet{conn};
        std::mt19937_64 jitter{std::random_device{}()};
        connected();
        while (!stop.load()) {
            const Operation op = workload.next();
            std::vector<char> allowed(op.requests.size(), 0);
            for (int attempt = 1;; ++attempt) {
                const Outcome outcome = op.kind == Kind::autocommit ? attempt_autocommit(conn, op.requests[0], allowed)
                                                                    : attempt_transaction(conn, op, allowed);
                if (outcome == Outcome::rolled_back) {
                    ++result.stats.retries;
                    if (stop.load()) break;
                    std::this_thread::sleep_for(backoff(attempt, jitter));
                    continue;
                }
                record(op, allowed, outcome, result);
                if (outcome != Outcome::committed) {
                    result.ending = Ending::connection_lost;
                    return result;
                }
                break;
            }
        }
        result.ending = Ending::stopped;
    } catch (const std::exception &error) {
        result.ending = Ending::failed;
        result.error = error.what();
    }
    return result;
}

}  // namespace crash
