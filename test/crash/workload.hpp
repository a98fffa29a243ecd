// What the crash test's clients ask for: which keys, in which kind of transaction.
//
// The mix makes the server do every kind of write a crash could catch halfway: inserts of new keys (some
// with long names, so that pages and btree leaves fill and split), HOT and non-HOT updates of existing
// rows (a few hot keys contended by every client, thousands of cold ones), denials that write nothing (a
// limit with a small capacity), single statements in autocommit and transactions of one to three
// requests at each isolation level.
#pragma once

#include <cstdint>
#include <random>
#include <string>
#include <vector>

namespace crash {

// The limits the test script defines. Their period is so long that refill stays below a millionth of a
// unit over the test, so a key's consumption is exactly capacity - value, rounded.
inline constexpr const char *kLimit = "crash";             // capacity 1,000,000: never runs out
inline constexpr const char *kTightLimit = "crash_tight";  // capacity 20: exhausted, then denies

enum class Kind { autocommit, read_committed, repeatable_read, serializable };

// SET TRANSACTION ISOLATION LEVEL ... for a transaction kind; nullptr for autocommit.
const char *isolation_sql(Kind kind) noexcept;

struct Request {
    std::string limit;
    std::string key;
};

struct Operation {
    Kind kind = Kind::autocommit;
    // One request in autocommit; one to three in a transaction, sorted so that every transaction locks
    // rows in the same order (no deadlock waits of deadlock_timeout).
    std::vector<Request> requests;
};

// One client's stream of operations. Keys created by this client are named after the round (one run of
// the load between two crashes) and the client, so that each round inserts keys no earlier round knew.
class Workload {
  public:
    Workload(int round, int client, std::uint64_t seed);
    Operation next();

  private:
    Request pick();
    std::string new_key();

    int round_;
    int client_;
    std::mt19937_64 random_;
    long created_ = 0;
};

}  // namespace crash
