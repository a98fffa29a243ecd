// Hot-key shards (core/shards.hpp): the per-shard limit, which shard a call picks, and the key's figures
// across shards.
#include <gtest/gtest.h>

#include <random>
#include <vector>

#include "core/shards.hpp"
#include "core/validate.hpp"
#include "support.hpp"

namespace pg_ratelimit::core {
namespace {

Limit Sharded(Limit limit, int shards) {
    limit.shards = shards;
    return limit;
}

ShardView Row(double value, Micros ts, bool busy = false) {
    ShardView view;
    view.stored = true;
    view.state = {value, ts};
    view.busy = busy;
    return view;
}

TEST(Shards, ShardLimitDividesRateCapacityAndReservations) {
    const Limit shard = shard_limit(Sharded(TokenBucket(160, kMin, 320, 16), 16));
    EXPECT_EQ(shard.rate, 10);
    EXPECT_EQ(shard.capacity, 20);
    EXPECT_EQ(shard.max_reserved, 1);
    EXPECT_EQ(shard.shards, 1);
    EXPECT_EQ(shard_limit(Sharded(TokenBucket(1, kSec, 1, kInf), 4)).max_reserved, kInf);
    const Limit one = TokenBucket(7, kSec, 9);
    EXPECT_EQ(shard_limit(one).capacity, 9);
}

TEST(Shards, Validation) {
    EXPECT_EQ(validate_limit(Sharded(TokenBucket(1, kSec, 1), 0)), LimitProblem::shards);
    EXPECT_EQ(validate_limit(Sharded(TokenBucket(1, kSec, 1), MAX_SHARDS + 1)), LimitProblem::shards);
    EXPECT_EQ(validate_limit(Sharded(TokenBucket(1, kSec, 1), MAX_SHARDS)), LimitProblem::none);
    EXPECT_EQ(validate_limit(Sharded(TokenBucket(1e-9, kSec, 1), 2)), LimitProblem::shards_too_small);
    EXPECT_EQ(validate_limit(Sharded(TokenBucket(1, kSec, 1e-9), 2)), LimitProblem::shards_too_small);
    // A cost above one shard's capacity could never succeed.
    const Limit limit = Sharded(TokenBucket(100, kSec, 100), 4);
    EXPECT_EQ(validate_cost(limit, 25), CostProblem::none);
    EXPECT_EQ(validate_cost(limit, 25.5), CostProblem::exceeds_capacity);
}

TEST(Shards, RequestsPreferFreeShardsThenFullerOnes) {
    const Limit shard = TokenBucket(1, kHour, 10);
    // Shard 0 is the fullest but busy; of the free ones, 2 is fuller than 1, 3 cannot serve 5 units.
    const ShardView views[] = {Row(10, kT0, true), Row(6, kT0), Row(8, kT0), Row(2, kT0)};
    for (std::uint64_t random = 0; random < 64; ++random) {
        const int picked = choose_shard_for_request(shard, views, 4, kT0, 5, false, 0, random);
        EXPECT_TRUE(picked == 1 || picked == 2) << picked;
    }
    // With exactly two free servers, the fuller of them, whatever the draw.
    for (std::uint64_t random = 0; random < 64; ++random)
        EXPECT_EQ(choose_shard_for_request(shard, views, 4, kT0, 5, false, 0, random * 0x9e3779b97f4a7c15ULL), 2);
    // A shard without a row is full, hence free and fullest.
    const ShardView fresh[] = {Row(3, kT0), ShardView{}, Row(3, kT0, true)};
    EXPECT_EQ(choose_shard_for_request(shard, fresh, 3, kT0, 5, false, 0, 0), 1);
}

TEST(Shards, DrawsSpreadOverTheFreeServers) {
    const Limit shard = TokenBucket(1, kHour, 10);
    std::vector<ShardView> views(16, Row(10, kT0));
    std::vector<int> hits(16, 0);
    std::mt19937_64 random(7);
    for (int i = 0; i < 16000; ++i)
        ++hits[choose_shard_for_request(shard, views.data(), 16, kT0, 1, false, 0, random())];
    for (int shard_index = 0; shard_index < 16; ++shard_index) EXPECT_GT(hits[shard_index], 500) << shard_index;
}

TEST(Shards, BusyShardsServeOnlyWhenNoFreeOneCan) {
    const Limit shard = TokenBucket(1, kHour, 10);
    const ShardView views[] = {Row(9, kT0, true), Row(1, kT0), Row(10, kT0, true)};
    EXPECT_EQ(choose_shard_for_request(shard, views, 3, kT0, 5, false, 0, 0), 2);
    // Nobody can serve 5 units: the one that can soonest (shard 2 after refill to 5 from 4... here the
    // fuller refills to the cost first).
    const ShardView empty[] = {Row(1, kT0), Row(3, kT0), Row(2, kT0)};
    EXPECT_EQ(choose_shard_for_request(shard, empty, 3, kT0, 5, false, 0, 0), 1);
}

TEST(Shards, RefundsGoToTheEmptiestShardWithARow) {
    const Limit shard = TokenBucket(1, kHour, 10);
    const ShardView views[] = {Row(9, kT0), ShardView{}, Row(2, kT0, true), Row(4, kT0)};
    EXPECT_EQ(choose_shard_for_refund(shard, views, 4, kT0, 0), 3);  // 2 is emptier but busy
    const ShardView busy_only[] = {Row(9, kT0, true), Row(2, kT0, true)};
    EXPECT_EQ(choose_shard_for_refund(shard, busy_only, 2, kT0, 0), 1);
    const ShardView none[] = {ShardView{}, ShardView{}};
    EXPECT_EQ(choose_shard_for_refund(shard, none, 2, kT0, 0), -1);
}

// A call whose transaction already holds one of the key's shards may not wait for a busy one: it takes a
// free shard, even one that must deny it, rather than the busy shard that could serve it.
TEST(Shards, NeverWaitsWhenItMayNot) {
    const Limit shard = shard_limit(Sharded(TokenBucket(4, kSec, 8), 4));  // capacity 2 per shard
    const ShardView views[] = {Row(0, kT0), Row(2, kT0, true), Row(0.5, kT0), Row(2, kT0, true)};
    // May wait: the only shards that can serve a unit are busy; the fullest of them.
    const int waiting = choose_shard_for_request(shard, views, 4, kT0, 1, false, 0, 0, true);
    EXPECT_TRUE(waiting == 1 || waiting == 3);
    // May not: a free shard, the one that could serve soonest (shard 2, half a unit short).
    EXPECT_EQ(choose_shard_for_request(shard, views, 4, kT0, 1, false, 0, 0, false), 2);
    // A free shard that can serve is taken either way.
    const ShardView one_free[] = {Row(1, kT0), Row(2, kT0, true)};
    EXPECT_EQ(choose_shard_for_request(shard, one_free, 2, kT0, 1, false, 0, 0, false), 0);
    // Refunds: only free shards with a row when it may not wait.
    const ShardView refund_views[] = {Row(0, kT0, true), Row(1.5, kT0)};
    EXPECT_EQ(choose_shard_for_refund(shard, refund_views, 2, kT0, 0, true), 1);  // a free shard beats a busy one
    EXPECT_EQ(choose_shard_for_refund(shard, refund_views, 2, kT0, 0, false), 1);
    const ShardView busy_refund[] = {Row(0, kT0, true), ShardView{}};
    EXPECT_EQ(choose_shard_for_refund(shard, busy_refund, 2, kT0, 0, false), 0);  // no free row: the busy one
}

TEST(Shards, FiguresAreTheKeys) {
    const Limit limit = Sharded(TokenBucket(4, kSec, 8), 4);  // shards of rate 1 per second, capacity 2
    const Limit shard = shard_limit(limit);
    const ShardView views[] = {Row(2, kT0), Row(0.5, kT0), Row(0, kT0), Row(2, kT0)};
    // Allowed on shard 0: 1 left there; the key holds 1 + 0.5 + 0 + 2 units, of which 1 + 0 + 0 + 2 = 3
    // whole units (what requests of 1 could get: the half unit of shard 1 serves none).
    const Outcome took = request(shard, &views[0].state, kT0, 1, false, 0);
    const Outcome allowed = combine_shards(shard, views, 4, 0, took, kT0, 1, false, false, 0);
    EXPECT_TRUE(allowed.allowed);
    EXPECT_DOUBLE_EQ(allowed.balance, 3);
    EXPECT_EQ(allowed.retry_after, 0);
    EXPECT_EQ(allowed.reset_after, 2 * kSec);  // shard 2 needs 2 units
    // No shard holds 1.5 units: denied on the one that could serve them soonest, shard 1 (half a second);
    // the key holds 0.5 + 1 + 0 + 0.25 units, 1 whole unit.
    const ShardView short_views[] = {Row(0.5, kT0), Row(1, kT0), Row(0, kT0), Row(0.25, kT0)};
    const int picked = choose_shard_for_request(shard, short_views, 4, kT0, 1.5, false, 0, 0);
    EXPECT_EQ(picked, 1);
    const Outcome denied_there = request(shard, &short_views[picked].state, kT0, 1.5, false, 0);
    const Outcome denied = combine_shards(shard, short_views, 4, picked, denied_there, kT0, 1.5, false, false, 0);
    EXPECT_FALSE(denied.allowed);
    EXPECT_EQ(denied.retry_after, kSec / 2);
    EXPECT_DOUBLE_EQ(denied.balance, 1);
    EXPECT_EQ(denied.reset_after, 2 * kSec);
}

// Whatever shards the calls pick, a key never admits more than the limit allows: the shards' capacities
// add up to the limit's.
TEST(Shards, NeverMoreThanTheLimitAcrossShards) {
    for (const int shards : {1, 2, 3, 16}) {
        const Limit limit = Sharded(TokenBucket(1, kYear, 48), shards);
        const Limit shard = shard_limit(limit);
        std::vector<ShardView> views(static_cast<std::size_t>(shards));
        std::mt19937_64 random(static_cast<unsigned>(shards));
        int admitted = 0;
        for (int call = 0; call < 200; ++call) {
            const int s = choose_shard_for_request(shard, views.data(), shards, kT0, 1, false, 0, random());
            const Outcome out = request(shard, views[s].stored ? &views[s].state : nullptr, kT0, 1, false, 0);
            if (!out.allowed) continue;
            ++admitted;
            views[s].stored = true;
            views[s].state = out.next;
        }
        EXPECT_EQ(admitted, 48) << shards << " shards";
    }
}

}  // namespace
}  // namespace pg_ratelimit::core
