// Per-limit statistics: what rate_limit_stats shows and rate_limit_stats_reset() zeroes.
//
// - Where: a fixed table in shared memory, one entry per (database, limit name), pg_ratelimit.stats_limits
//   of them (default 1,000). It needs shared_preload_libraries = 'pg_ratelimit', like memory limits:
//   shared memory is sized when the server starts. Without the preload nothing is counted, every decision
//   works as before, and reading the view or resetting raises 55000 with a hint (an empty view would say
//   "no traffic" where there was some). Counters are the server's: a standby counts its own calls, and
//   a restart (or a crash) starts them at zero.
// - One place: settle() (settle.cpp), the decision point of every function, calls stats_count() once per
//   decided key, after the decision (and after a shadow limit's denial was turned into an admission);
//   rate_limit_acquire, which decides without settle(), once per call as a request of one unit.
//   Nothing is counted for a call that fails before or during its decision (bad input, 40001).
// - What counts (mode of the settle() call):
//     request   allowed or denied; admitted units into units_reserved (reserve => true) or
//               units_consumed; a shadow limit's would-be denial is allowed, counted in shadow_denied, and
//               consumes nothing (rate_limit_request, _many per key, _throttle, _enforce)
//     check     checks only: a check decides nothing, and counting it as a request would make a limit
//               polled by dashboards look busy
//     refund    units_refunded, the units asked back (a key never goes above capacity: more may be asked
//               than a key could take)
//     take      units_consumed (rate_limit_settle's extra cost beyond a reservation)
//   and retries: lost races settle() retried under READ COMMITTED, on the direct or the SQL path (the
//   memory path never loses one).
// - Not transactional, like pg_stat_*: a decision counts when it is made, even if its transaction rolls
//   back (the consumption then does too, for durable and unlogged limits).
// - Cost: no lock and no shared lookup per call. A backend remembers, per limit name, its entry and the
//   entry's generation; a call compares the name with the last one counted (one memcmp) or finds it in a
//   small backend-local hash, checks the generation (one atomic read) and adds with atomic instructions
//   (fetch-add for counts, compare-and-swap on a double's bits for units, which may be fractional).
// - Full table: a limit that finds no free entry is counted in the overflow row (limit_name NULL, the
//   server's: shared by every database), and its backend says so once with a WARNING: nothing is lost
//   silently.
// - Limits are counted by name: a redefinition keeps its counters; a dropped limit keeps its row until a
//   reset, and a limit defined again under that name continues it. rate_limit_stats_reset(name) zeroes
//   one row; rate_limit_stats_reset() removes every row of the database (those of dropped limits too) and
//   zeroes the overflow row. A freed entry is reused only after a grace period of a second, so that a
//   call that checked the entry's generation just before the reset cannot count into another limit.
#pragma once

#include "core/limit.hpp"
#include "postgres_headers.hpp"
#include "state/settle.hpp"

namespace pg_ratelimit {

// From _PG_init: the settings, and the shared memory when loaded by shared_preload_libraries.
void stats_init();

// Counts one decided key of `limit_name` (settle.cpp). `lost_races`: those settle() retried.
void stats_count(const text *limit_name, SettleMode mode, bool reserve, double cost, const core::Outcome &outcome,
                 int lost_races);

}  // namespace pg_ratelimit
