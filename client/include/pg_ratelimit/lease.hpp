// A lease of a concurrency limit (rate_limit_acquire): one of a key's N slots, held by the connection that
// took it. A plain value: it describes the lease, it does not own it (nothing is released when it goes).
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

namespace pg_ratelimit {

// transaction: held until the transaction that took it commits or rolls back (or, prepared, until COMMIT
// PREPARED / ROLLBACK PREPARED). session: held by the connection until Limiter::release(), until the
// connection closes, or until the limit's period has passed (it then stops counting); released at once if
// the transaction that took it rolls back (a retried serialization failure takes no second one).
enum class LeaseScope { transaction, session };

struct Lease {
    bool acquired = false;  // the caller may go ahead: a slot was taken, unless shadow_denied
    // A shadow limit (rate_limit_define(..., shadow => true)) had no free slot: the caller may go ahead
    // (acquired), but holds no slot; a real limit would have refused.
    bool shadow_denied = false;
    std::int64_t free_slots = 0;  // the key's free slots after the call (0 when denied)
    // Denied: a hint of when to try again: the soonest a session lease found expires, or one eighth of the
    // limit's period where a transaction lease holds the slot (its end is unknown). 0 when acquired.
    std::chrono::microseconds retry_after{0};
    // Until every session lease now held on the key (this one included) has expired; transaction leases are
    // not counted. 0 without session leases.
    std::chrono::microseconds reset_after{0};
    LeaseScope scope = LeaseScope::transaction;
    std::string key{};
    std::string limit{};

    explicit operator bool() const { return acquired; }
};

}  // namespace pg_ratelimit
