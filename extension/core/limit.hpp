// The pure rate-limit model: a limit's configuration, the two numbers kept per key, and the outcome of
// one call. No PostgreSQL headers here (the glue includes this file, never the reverse), so GoogleTest
// can exercise every algorithm without a server.
//
// Everything in core/ is noexcept and allocation-free: the PostgreSQL glue calls it between functions
// that may longjmp, so nothing here may throw or own resources.
#pragma once

#include <cstdint>
#include <type_traits>

namespace pg_ratelimit::core {

// Microseconds, the unit of PostgreSQL's TimestampTz. Absolute times share PostgreSQL's epoch
// (2000-01-01 UTC), but the core only ever uses differences and the grid origin below.
using Micros = std::int64_t;

// The values are part of the memory-mode fingerprint (memory_table.cpp): append, never renumber.
// concurrency: leases (core/leases.hpp), not a rate: a key holds at most rate slots at once; no state rows.
enum class Algorithm : std::uint8_t { token_bucket, fixed_window, gcra, sliding_window, concurrency };

// Where a limit keeps its keys' state (the glue's concern; the decisions do not depend on it):
//   durable   rate_limit_state: WAL-logged, transactional, replicated, kept across crashes
//   unlogged  rate_limit_state_unlogged: transactional, no WAL, emptied by a crash, not on standbys
//   memory    shared memory: not transactional, per server, works read-only and on standbys
enum class Storage : std::uint8_t { durable, unlogged, memory };

// Bounds that keep every derived figure exact enough and inside int64 (checked by validate.hpp).
inline constexpr double MAX_UNITS = 1e12;  // rate, capacity, cost, max_reserved
// The least rate, capacity or cost: subnormal and near-subnormal unit counts lose all precision (their
// tolerance and refill per microsecond underflow), and no quota needs them.
inline constexpr double MIN_UNITS = 1e-9;
inline constexpr Micros MAX_PERIOD = Micros{100} * 366 * 86400 * 1000000;  // 100 years
inline constexpr Micros MAX_DURATION = MAX_PERIOD * 1000;                  // longest retry_after/reset_after reported
// The last instant PostgreSQL's timestamptz can hold (END_TIMESTAMP - 1: 294276-12-31 23:59:59.999999 UTC):
// a stored ts never goes beyond it, or the row could not be dumped and restored.
inline constexpr Micros MAX_TIMESTAMP = Micros{9223371331200000000} - 1;
inline constexpr int MAX_SHARDS = 256;
// The shortest sliding-window period: the previous window's count is kept in whole quanta of at most
// capacity / 999 (sliding_window.cpp).
inline constexpr Micros MIN_SLIDING_PERIOD = 1000;
// The widest jitter: one day.
inline constexpr Micros MAX_JITTER = Micros{86400} * 1000000;

// A time zone as the glue supplies it (core/calendar.hpp). Neither function may fail: outside the zone database's range
// they answer as UTC.
struct TimeZone {
    // The zone's offset from UTC at a UTC instant (local time - UTC), in microseconds.
    Micros (*offset_at)(const TimeZone &zone, Micros utc) noexcept;
    // The UTC instant of a local time (see the header comment for times a transition skips or repeats).
    Micros (*utc_of_local)(const TimeZone &zone, Micros local) noexcept;
    const void *data;  // the glue's zone
    // A hash of the zone's name (the glue's): the same zone in every process, for fingerprints
    // (memory_table.hpp: memory_definition).
    std::uint64_t id = 0;
    // The last windows found in this zone (calendar.cpp): most calls fall in the window of the previous
    // one, and a window's openings cost several zone lookups. Written through const: the zone is the
    // backend's own, never shared between threads.
    struct Window {
        std::uint8_t unit;  // CalendarUnit; 0 (none): an empty slot
        std::int32_t count;
        std::int64_t index;  // (calendar indexes are day counts or less: int64, 8-byte aligned)
        Micros opens;
        Micros closes;
    };
    mutable Window recent[4]{};
    mutable unsigned next_recent = 0;
};

enum class CalendarUnit : std::uint8_t { none, day, week, month };

// A fixed window's calendar (core/calendar.hpp): windows of `count` units opening at local midnight in
// `zone`; unit none: the plain grid of Limit::period.
struct Calendar {
    CalendarUnit unit = CalendarUnit::none;
    std::int32_t count = 0;
    const TimeZone *zone = nullptr;
};

// The fields are ordered by size (8-byte ones first), so that the struct has no padding.
struct Limit {
    double rate = 0;          // units added per period
    Micros period = 0;        // > 0
    double capacity = 0;      // the most that can accumulate; > 0
    double max_reserved = 0;  // deepest debt a reservation may create; +infinity: up to MAX_UNITS
    Micros start = 0;         // with has_start: fixed and sliding windows start at start + k * period
    // Changes whenever the keys' state must start afresh: a new definition, or a redefinition of the
    // algorithm, shards or storage (rate_limit_define draws a new one). Memory state made under another
    // epoch counts as absent, on a standby too, where no trigger can forget it.
    std::uint64_t epoch = 0;
    // Denied calls' retry_after is spread by a random 0..jitter microseconds (algorithms.hpp: jittered).
    Micros jitter = 0;
    // Fixed windows only: calendar days, weeks or months in a time zone instead of the period's grid;
    // period then holds the nominal length (calendar_nominal_period), used only to bound it.
    Calendar calendar{};
    // Hot-key shards (core/shards.hpp): each key's allowance is split over this many rows, each a limit of
    // its own with rate, capacity and max_reserved divided by the count. The decisions below are made per
    // shard, with shard_limit(); 1 means no split.
    int shards = 1;
    Algorithm algorithm = Algorithm::token_bucket;
    Storage storage = Storage::durable;
    bool has_start = false;  // fixed and sliding windows only: whether start is set
    // Shadow mode: decisions are made and recorded as usual, but a denial is returned as allowed (and
    // flagged Outcome::shadow_denied), consuming nothing; a new limit can be watched before it bites.
    bool shadow = false;
};

// The two numbers stored per (limit, key). value may be negative (debt from reservations).
// Token bucket: ts is when value was last computed. Fixed window: ts is the last time the key was
// evaluated; the window grid itself comes from the limit (start, or a per-key offset). GCRA and the
// sliding window encode their own state in the two numbers (gcra.cpp, sliding_window.cpp).
struct State {
    double value = 0;
    Micros ts = 0;
};

struct Outcome {
    bool allowed = false;
    bool write = false;          // next differs from the stored state (or there is none) and must be written
    State next{};                // the state to store when write is true
    double balance = 0;          // units available after the call; negative while in debt
    Micros retry_after = 0;      // 0 when allowed now; see algorithms.hpp for the exact meaning
    Micros reset_after = 0;      // until the key is back at full capacity
    bool shadow_denied = false;  // a shadow limit denied: allowed was turned true, nothing was consumed
};

static_assert(std::is_trivially_destructible_v<Limit> && std::is_trivially_destructible_v<State> &&
                  std::is_trivially_destructible_v<Outcome>,
              "core types cross longjmp boundaries and must stay trivial");

}  // namespace pg_ratelimit::core
