// One client of the crash test's load: its own connection, running a Workload's operations until the
// server dies under it, and counting what the server acknowledged.
#pragma once

#include <atomic>
#include <functional>
#include <string>
#include <unordered_map>

#include "workload.hpp"

namespace crash {

// Units of one key (limit and key), as the client saw them.
struct KeyCounts {
    // Admitted and committed: the autocommit statement, or the COMMIT of the transaction, returned
    // success. The server must still hold every one of these after crash recovery.
    long acknowledged = 0;
    // The crash hid the outcome: the connection broke while an autocommit statement, or the COMMIT of a
    // transaction whose request had been admitted, was on its way or awaited its answer. Recovery may
    // keep these or not. (A statement that failed to go out at all counts too: the client cannot tell.)
    long in_doubt = 0;
};

// Keyed by limit + '\t' + key.
using Tally = std::unordered_map<std::string, KeyCounts>;

struct ClientStats {
    long committed = 0;  // operations acknowledged (autocommit statements and transactions)
    long admitted = 0;   // requests admitted in those
    long denied = 0;     // requests denied in those
    long retries = 0;    // attempts rolled back by 40001 or 40P01 and run again
    long in_doubt = 0;   // admissions whose outcome the crash hid
};

enum class Ending {
    connection_lost,  // the expected end: the server crashed
    stopped,          // told to stop while the server was still up
    failed,           // an error other than a lost connection, 40001 or 40P01: a bug to report
};

struct ClientResult {
    Tally tally;
    ClientStats stats;
    Ending ending = Ending::stopped;
    std::string error;  // failed: what went wrong
};

// Connects through the libpq environment (PGHOST, ...), calls connected(), then runs the workload's
// operations until the connection is lost or stop becomes true. Operations rolled back by 40001 or 40P01
// run again, as a whole, after a jittered back-off (as the client library's run_transaction does); a
// lost connection is never re-established: the load ends with the server.
ClientResult run_client(Workload workload, const std::atomic<bool> &stop, const std::function<void()> &connected);

}  // namespace crash
