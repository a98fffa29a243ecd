// Hot-key shards (shards.hpp).
#include "core/shards.hpp"

#include <algorithm>

#include "core/algorithms.hpp"

namespace pg_ratelimit::core {
namespace {

const State *state_of(const ShardView &view) noexcept { return view.stored ? &view.state : nullptr; }

}  // namespace

Limit shard_limit(const Limit &limit) noexcept {
    if (limit.shards <= 1) return limit;
    Limit shard = limit;
    const double count = limit.shards;
    shard.rate = limit.rate / count;
    shard.capacity = limit.capacity / count;
    shard.max_reserved = limit.max_reserved / count;  // infinity stays infinity
    shard.shards = 1;
    return shard;
}

int choose_shard_for_request(const Limit &shard, const ShardView *views, int count, Micros now, double cost,
                             bool reserve, Micros origin, std::uint64_t random, bool may_wait) noexcept {
    // Pass 1 and 2 share one scan: the free servers are counted, the fullest server remembered.
    int free_servers = 0;
    int fullest = -1;
    double fullest_balance = 0;
    for (int i = 0; i < count; ++i) {
        if (!admits(shard, state_of(views[i]), now, cost, reserve, origin)) continue;
        if (!views[i].busy) ++free_servers;
        const double balance = balance_at(shard, state_of(views[i]), now, origin);
        if (fullest < 0 || balance > fullest_balance) {
            fullest = i;
            fullest_balance = balance;
        }
    }
    if (free_servers > 0) {
        // The a-th and b-th free servers, a != b when there are two or more.
        const int a = static_cast<int>(random % static_cast<std::uint64_t>(free_servers));
        const int b = free_servers < 2
                          ? a
                          : (a + 1 + static_cast<int>((random >> 32) % static_cast<std::uint64_t>(free_servers - 1))) %
                                free_servers;
        int picked[2] = {-1, -1};
        for (int i = 0, seen = 0; i < count; ++i) {
            if (views[i].busy || !admits(shard, state_of(views[i]), now, cost, reserve, origin)) continue;
            if (seen == a) picked[0] = i;
            if (seen == b) picked[1] = i;
            ++seen;
        }
        return balance_at(shard, state_of(views[picked[1]]), now, origin) >
                       balance_at(shard, state_of(views[picked[0]]), now, origin)
                   ? picked[1]
                   : picked[0];
    }
    if (fullest >= 0 && (may_wait || !views[fullest].busy)) return fullest;
    // A denial (or, when the call may not wait, every shard that could serve is busy): the shard that
    // could serve it soonest, among those that are not busy if the call may not wait and there are some.
    bool any_free = false;
    for (int i = 0; i < count; ++i) any_free = any_free || !views[i].busy;
    const bool free_only = !may_wait && any_free;
    int soonest = -1;
    Micros soonest_wait = MAX_DURATION;
    for (int i = 0; i < count; ++i) {
        if (free_only && views[i].busy) continue;
        const Micros wait = request(shard, state_of(views[i]), now, cost, reserve, origin).retry_after;
        if (soonest < 0) soonest = i;
        if (wait < soonest_wait) {
            soonest = i;
            soonest_wait = wait;
        }
    }
    return soonest;
}

int choose_shard_for_refund(const Limit &shard, const ShardView *views, int count, Micros now, Micros origin,
                            bool may_wait) noexcept {
    bool any_free = false;
    for (int i = 0; i < count; ++i) any_free = any_free || (views[i].stored && !views[i].busy);
    const bool free_only = !may_wait && any_free;
    int best = -1;
    double best_balance = 0;
    bool best_busy = true;
    for (int i = 0; i < count; ++i) {
        if (!views[i].stored || (free_only && views[i].busy)) continue;
        const double balance = balance_at(shard, &views[i].state, now, origin);
        // A free shard beats a busy one; then the emptier.
        const bool better =
            best < 0 || (best_busy && !views[i].busy) || (best_busy == views[i].busy && balance < best_balance);
        if (better) {
            best = i;
            best_balance = balance;
            best_busy = views[i].busy;
        }
    }
    return best;
}

Outcome combine_shards(const Limit &shard, const ShardView *views, int count, int chosen, const Outcome &decided,
                       Micros now, double cost, bool reserve, bool refund, Micros origin) noexcept {
    Outcome out = decided;
    double sum = 0;
    Micros soonest = decided.retry_after;
    Micros latest_debt = decided.retry_after;
    Micros latest_full = decided.reset_after;
    for (int i = 0; i < count; ++i) {
        // Whole units shard by shard: four shards holding 0.9 each can serve no request of 1, so the key
        // has 0 remaining, not the 3 the floor of their sum would claim.
        if (i == chosen) {
            sum += static_cast<double>(whole_units(shard, std::max(decided.balance, 0.0)));
            continue;
        }
        const State *state = state_of(views[i]);
        sum += static_cast<double>(whole_units(shard, std::max(balance_at(shard, state, now, origin), 0.0)));
        latest_full = std::max(latest_full, time_to_full(shard, state, now, origin));
        if (refund) {
            latest_debt = std::max(latest_debt, time_out_of_debt(shard, state, now, origin));
        } else if (!decided.allowed) {
            soonest = std::min(soonest, request(shard, state, now, cost, reserve, origin).retry_after);
        }
    }
    out.balance = sum;
    out.reset_after = latest_full;
    if (refund) out.retry_after = latest_debt;
    if (!decided.allowed && !refund) out.retry_after = soonest;
    return out;
}

}  // namespace pg_ratelimit::core
