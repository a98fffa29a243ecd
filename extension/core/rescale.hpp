// What a redefinition does to the state its keys hold (rate_limit_define's `rescale` argument).
//
// - proportional (the default, bucket4j's PROPORTIONALLY): each key keeps the same fraction of its
//   capacity. A key with 40 of 100 units left holds 80 of 200 after the capacity doubles, and a debt
//   scales alike. A sliding window scales both of its counts by the new rate over the old one.
// - as_is: the stored numbers stay as they are and mean what they mean under the new definition (a
//   lower capacity caps what a key holds).
// - reset: every key starts afresh, full.
// Another algorithm starts the keys afresh whatever the rule, unless the two algorithms' states convert
// exactly: token bucket and GCRA hold the same balances, so a key keeps its balance across the change
// (scaled as above when the capacity changes too).
#pragma once

#include "core/limit.hpp"

namespace pg_ratelimit::core {

enum class Rescale : std::uint8_t { proportional, as_is, reset };

// Whether keys of `from` can keep their state under `to` (same algorithm, or token bucket <-> GCRA) with
// the same number of shards.
[[nodiscard]] bool state_carries_over(const Limit &from, const Limit &to) noexcept;

// Whether carrying state from `from` to `to` (by either rule but reset) rewrites it, otherwise the stored
// numbers stay as they are: an algorithm conversion, another rate, period or capacity, or another window
// grid. A redefinition takes effect at its instant, so a key is brought to that instant under the old
// numbers before it is carried over: numbers left as they are must read, from then on, exactly as the
// rewritten ones would (test/core/redefinition_test.cpp).
[[nodiscard]] bool rescale_rewrites(const Limit &from, const Limit &to) noexcept;

// The state of one key (or shard: pass shard limits) under `to`, from its state `stored` under `from`,
// evaluated at now; the origins are the key's window grid under each definition (key_origin). Requires
// state_carries_over(from, to).
[[nodiscard]] State rescaled_state(const Limit &from, const Limit &to, const State &stored, Micros now,
                                   Micros from_origin, Micros to_origin, Rescale rule) noexcept;

}  // namespace pg_ratelimit::core
