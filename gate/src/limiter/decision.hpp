// What the database decided for one (key, limit) of a call, and for the call as a whole.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

namespace gate::limiter {

struct TripleDecision {
    bool allowed = false;
    std::int64_t remaining = 0;
    std::chrono::microseconds retry_after{0};
    std::chrono::microseconds reset_after{0};
    bool shadow_denied = false;
};

// One (key, limit) of a call: the database limit's name and the key it is decided for.
struct Triple {
    std::string key{};
    std::string limit{};
    bool memory = false;  // storage => 'memory': its decision takes effect when the statement runs
};

enum class CallStatus {
    decided,      // the database answered
    unavailable,  // no answer: no connection, lost, timed out, or in doubt (failure_mode applies)
    error,        // the database refused the call (an SQL error other than a retryable one)
};

struct CallOutcome {
    CallStatus status = CallStatus::unavailable;
    TripleDecision overall{};            // request_all's row 0; for reserve_all: allowed when every one was
    std::vector<TripleDecision> each{};  // one per triple, in the order given
    std::string error{};                 // what went wrong, for the log
    std::string sqlstate{};              // status error: the database's SQLSTATE
    int attempts = 0;
};

}  // namespace gate::limiter
