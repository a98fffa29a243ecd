#include "workload.hpp"

#include <algorithm>
#include <tuple>

namespace crash {
namespace {

constexpr int kHotKeys = 4;      // every client updates these: row-lock waits, 40001 at RR/SERIALIZABLE
constexpr int kColdKeys = 3000;  // rows created in the first round, updated in later ones
constexpr int kTightKeys = 40;   // under kTightLimit: soon exhausted, then only denials

// Percentages of the requests going to each kind of key; the rest create new keys.
constexpr int kHotShare = 35;
constexpr int kColdShare = 40;
constexpr int kTightShare = 10;

// Percentages of the operations of each kind.
constexpr int kAutocommitShare = 40;
constexpr int kReadCommittedShare = 30;
constexpr int kRepeatableReadShare = 15;

}  // namespace

const char *isolation_sql(Kind kind) noexcept {
    switch (kind) {
        case Kind::read_committed:
            return "SET TRANSACTION ISOLATION LEVEL READ COMMITTED";
        case Kind::repeatable_read:
            return "SET TRANSACTION ISOLATION LEVEL REPEATABLE READ";
        case Kind::serializable:
            return "SET TRANSACTION ISOLATION LEVEL SERIALIZABLE";
        case Kind::autocommit:
            break;
    }
    return nullptr;
}

Workload::Workload(int round, int client, std::uint64_t seed)
    : round_(round), client_(client), random_(seed ^ (static_cast<std::uint64_t>(client) * 0x9E3779B97F4A7C15ULL)) {}

std::string Workload::new_key() {
    std::string key =
        "new-r" + std::to_string(round_) + "-c" + std::to_string(client_) + "-" + std::to_string(created_++);
    // One new key in four is long (100 to 600 bytes): rows and btree entries fill pages sooner, so pages
    // split and updates stop being HOT while the load runs.
    if (std::uniform_int_distribution<int>(0, 3)(random_) == 0)
        key.append(std::uniform_int_distribution<std::size_t>(100, 600)(random_), 'x');
    return key;
}

Request Workload::pick() {
    const int share = std::uniform_int_distribution<int>(0, 99)(random_);
    if (share < kHotShare)
        return {kLimit, "hot-" + std::to_string(std::uniform_int_distribution<int>(0, kHotKeys - 1)(random_))};
    if (share < kHotShare + kColdShare)
        return {kLimit, "cold-" + std::to_string(std::uniform_int_distribution<int>(0, kColdKeys - 1)(random_))};
    if (share < kHotShare + kColdShare + kTightShare)
        return {kTightLimit, "tight-" + std::to_string(std::uniform_int_distribution<int>(0, kTightKeys - 1)(random_))};
    return {kLimit, new_key()};
}

Operation Workload::next() {
    Operation op;
    const int share = std::uniform_int_distribution<int>(0, 99)(random_);
    if (share < kAutocommitShare)
        op.kind = Kind::autocommit;
    else if (share < kAutocommitShare + kReadCommittedShare)
        op.kind = Kind::read_committed;
    else if (share < kAutocommitShare + kReadCommittedShare + kRepeatableReadShare)
        op.kind = Kind::repeatable_read;
    else
        op.kind = Kind::serializable;
    const int count = op.kind == Kind::autocommit ? 1 : std::uniform_int_distribution<int>(1, 3)(random_);
    for (int i = 0; i < count; ++i) op.requests.push_back(pick());
    std::sort(op.requests.begin(), op.requests.end(),
              [](const Request &a, const Request &b) { return std::tie(a.limit, a.key) < std::tie(b.limit, b.key); });
    return op;
}

}  // namespace crash
