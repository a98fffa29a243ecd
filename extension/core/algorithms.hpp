// The decisions of a rate limit, as pure functions of (limit, stored state, now, cost).
//
// Token bucket: units refill continuously, value = min(value + elapsed * rate / period, capacity).
// GCRA: the token bucket's balances, kept as one instant, the theoretical arrival time (gcra.cpp).
// Fixed window: windows start at origin + k * period; each window boundary crossed adds rate units, up
//   to capacity. origin is the limit's start, or, without one, a per-key offset in [0, period) derived
//   from a hash of the key, so keys do not all refill at the same instant.
// Sliding window: on the fixed window's grid, a key has used its current window's count plus the previous
//   window's weighted by its remaining overlap (sliding_window.cpp); capacity is the rate.
//
// Time never runs backwards for a key: if now is earlier than the stored ts (the server clock was
// stepped back), the key is evaluated at ts (the sliding window: at the start of its stored window; GCRA
// keys simply hold less), so no units are minted twice; durations are still reported relative to the
// real now.
#pragma once

#include <cstddef>
#include <cstdint>

#include "core/limit.hpp"

namespace pg_ratelimit::core {

// Stable 64-bit FNV-1a of the key bytes; the fixed-window offset of keys without a start.
[[nodiscard]] std::uint64_t key_hash(const char *data, std::size_t size) noexcept;

// Whether the algorithm counts on a window grid (fixed and sliding windows).
[[nodiscard]] bool uses_window_grid(Algorithm algorithm) noexcept;

// Where a key's window grid starts, given the key's key_hash (0 for algorithms without a grid).
[[nodiscard]] Micros window_origin(const Limit &limit, std::uint64_t key_hash) noexcept;
// The same from the key itself; hashes it only when the grid depends on it.
[[nodiscard]] Micros key_origin(const Limit &limit, const char *key, std::size_t size) noexcept;

// A denied call's retry_after spread by jitter (Limit::jitter): retry_after plus random % (jitter + 1)
// microseconds, never beyond MAX_DURATION; unchanged without jitter. Never shorter than the true wait.
[[nodiscard]] Micros jittered(const Limit &limit, Micros retry_after, std::uint64_t random) noexcept;

// Slack for float rounding when comparing unit counts: a request short by less than this is admitted
// and the tiny shortfall is stored as debt, so rounding can neither mint nor lose a unit. Relative to
// capacity (1e-14 of it); for the token bucket also at most half a microsecond of refill.
[[nodiscard]] double tolerance(const Limit &limit) noexcept;

// Consume cost units (stored == nullptr: the key has no row yet, i.e. it is full).
// - Allowed without debt: retry_after = 0.
// - Allowed by reservation (reserve, debt within max_reserved): retry_after = until the debt is repaid,
//   i.e. when the reserved work may run.
// - Denied: nothing to write; retry_after = until the same request would succeed.
// check() is exactly this decision with write ignored.
[[nodiscard]] Outcome request(const Limit &limit, const State *stored, Micros now, double cost, bool reserve,
                              Micros origin) noexcept;

// A reservation bounded in time (rate_limit_reserve): request(..., reserve = true) when the reserved units
// are due within max_wait (its retry_after <= max_wait), else a denial that writes nothing, whose
// retry_after is the earliest microsecond from which such a reservation would be due within max_wait (the
// balance then covers the cost minus max_reserved, and covers the whole cost max_wait later): calling
// again after it succeeds unless others took units meanwhile. max_wait >= MAX_DURATION: no bound.
[[nodiscard]] Outcome reserve_within(const Limit &limit, const State *stored, Micros now, double cost, Micros max_wait,
                                     Micros origin) noexcept;

// Give cost units back, never above capacity. Always allowed; retry_after = until the key is out of
// debt (0 when it is not in debt). A key without a row is already full: nothing to write.
[[nodiscard]] Outcome refund(const Limit &limit, const State *stored, Micros now, double cost, Micros origin) noexcept;

// Take cost units (>= 0) whatever the balance: the extra cost of work already done (rate_limit_settle with
// actual > reserved). Always allowed; the key may go into debt beyond max_reserved, since refusing would
// change nothing, but never below -MAX_UNITS (like every debt). A sliding window has no debt (its previous
// window's count could not be stored): it is taken down to 0 at most, the rest forgiven. retry_after =
// until the key is out of debt. A cost of 0 writes nothing.
[[nodiscard]] Outcome take(const Limit &limit, const State *stored, Micros now, double cost, Micros origin) noexcept;

// Whether a stored key has refilled to full capacity by now, i.e. its row is equivalent to no row and
// may be deleted: exactly when a request for the whole capacity would be admitted at now, except that a
// row stored later than now (the clock stepped back) is never full, since it holds the key's time.
[[nodiscard]] bool is_full(const Limit &limit, const State &stored, Micros now, Micros origin) noexcept;

// rate_limit_cleanup deletes a row only if it was already full this long before now. A deleted row takes
// the key's time with it: if the clock later stepped back behind that time, the key, starting afresh,
// would refill again up to it. With the margin, a step back of up to this long mints nothing; a longer
// one can give a key whose row was deleted up to one refill of the difference (README, Operations).
inline constexpr Micros CLEANUP_MARGIN = Micros{5} * 60 * 1000000;

// A key's balance at now, before any consumption (nullptr: no row, full).
[[nodiscard]] double balance_at(const Limit &limit, const State *stored, Micros now, Micros origin) noexcept;

// Whether request() would admit cost now, without computing its waits.
[[nodiscard]] bool admits(const Limit &limit, const State *stored, Micros now, double cost, bool reserve,
                          Micros origin) noexcept;

// How long after now until the key is back at full capacity (reset_after), and until it is out of debt.
[[nodiscard]] Micros time_to_full(const Limit &limit, const State *stored, Micros now, Micros origin) noexcept;
[[nodiscard]] Micros time_out_of_debt(const Limit &limit, const State *stored, Micros now, Micros origin) noexcept;

// The whole units a balance represents for users: 0 while in debt.
[[nodiscard]] std::int64_t whole_units(const Limit &limit, double balance) noexcept;

}  // namespace pg_ratelimit::core
