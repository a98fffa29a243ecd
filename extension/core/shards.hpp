// Hot-key shards: a key's allowance split over `shards` rows, so that concurrent transactions on one key
// can write different rows instead of queueing on (or, under REPEATABLE READ and SERIALIZABLE, failing
// on) a single one.
//
// Each shard is a limit of its own: rate, capacity and max_reserved divided by the number of shards, with
// the key's window grid. Each decision is made on one shard, exactly, so the key never admits more than
// the limit allows. What the split costs:
// - a request is decided by one shard: it can be denied while the shards together hold enough, and a cost
//   above one shard's capacity can never succeed (rate_limit_request refuses it, 22023);
// - a refund goes to one shard, the emptiest, and is capped at that shard's capacity;
// - the figures of a decision are the key's: `remaining` counts the whole units of all shards; a denial's
//   retry_after is when the first shard could serve the request; reset_after is when the last shard is
//   full again.
#pragma once

#include <cstdint>

#include "core/limit.hpp"

namespace pg_ratelimit::core {

// The limit one shard of `limit` enforces (the limit itself when it has one shard).
[[nodiscard]] Limit shard_limit(const Limit &limit) noexcept;

// What a call knows of one shard before it picks one.
struct ShardView {
    State state{};
    bool stored = false;  // the shard has a row (state); without one it is full
    // A concurrent transaction is modifying the shard's row, or modified it after the call's snapshot:
    // writing it now would wait (READ COMMITTED) or fail with 40001 (REPEATABLE READ, SERIALIZABLE).
    bool busy = false;
};

// The shard a request (or a check) goes to, given the views of all `count` shards under their shard
// limit `shard`:
// 1. among the shards that can serve it now and that no concurrent transaction is busy with, two drawn at
//    random, the fuller (two random choices: fuller shards first, without every concurrent caller
//    crowding onto the single fullest one);
// 2. else the fullest shard that can serve it, busy or not (the call then waits for it, or conflicts),
//    unless the call may not wait (`may_wait` false) and that shard is busy;
// 3. else (a denial) the shard that could serve it soonest; if the call may not wait, among the shards
//    that are not busy (when there are some).
// A call may not wait when its transaction already wrote one of the key's shards: waiting for a shard
// another transaction holds, while that one may wait for ours, would deadlock.
// `random` is any 64-bit random number; the choice is otherwise deterministic.
[[nodiscard]] int choose_shard_for_request(const Limit &shard, const ShardView *views, int count, Micros now,
                                           double cost, bool reserve, Micros origin, std::uint64_t random,
                                           bool may_wait = true) noexcept;

// The shard a refund goes to: the emptiest shard with a row, preferring those no concurrent transaction
// is busy with (only those, when the call may not wait and there are some); -1 if no shard has a row
// (every shard is full: there is nothing to give back to).
[[nodiscard]] int choose_shard_for_refund(const Limit &shard, const ShardView *views, int count, Micros now,
                                          Micros origin, bool may_wait = true) noexcept;

// The key's decision once shard `chosen` decided `decided` (views[chosen] still holding that shard's state
// before the call): allowed, write and next are the shard's; balance is the sum of the whole units of
// each shard after the call (what `remaining` counts: units a request of 1 could actually get); retry_after is the
// shard's when allowed, and for a denial the soonest any shard could serve the same request; reset_after is the latest
// any shard is full again. For a refund, pass refund = true (its retry_after, how long the key stays in debt, is the
// latest of the shards in debt).
[[nodiscard]] Outcome combine_shards(const Limit &shard, const ShardView *views, int count, int chosen,
                                     const Outcome &decided, Micros now, double cost, bool reserve, bool refund,
                                     Micros origin) noexcept;

}  // namespace pg_ratelimit::core
