// One decision on one key, whatever the access path: read the key's row, let the core decide, write the
// outcome (or insert the key's first row).
//
// - Denials and checks write nothing.
// - If the write loses a race (READ COMMITTED only: a concurrent caller changed the row first, or
//   inserted the key's first row), the next attempt locks the newest version and decides again, so
//   concurrent callers on one key wait their turn and never fail.
// - Under REPEATABLE READ and SERIALIZABLE a conflicting write raises 40001, as UPDATE does; the client
//   library retries the transaction.
#pragma once

#include "core/limit.hpp"
#include "state/state_access.hpp"

namespace pg_ratelimit {

// take: core::take (rate_limit_settle's extra cost), always allowed, into debt if it must.
enum class SettleMode { request, check, refund, take };

// max_wait bounds a reservation in time (core::reserve_within): a reservation not due within it is a
// denial that writes nothing. MAX_DURATION: no bound.
// *stale_definition: a memory entry was made under other numbers of the limit (StateHandle::stale_definition):
// nothing was decided, and the outcome means nothing.
core::Outcome settle(const StateTarget &target, const core::Limit &limit, SettleMode mode, double cost, bool reserve,
                     core::Micros origin, core::Micros max_wait, bool *stale_definition);

}  // namespace pg_ratelimit
