#include "state/settle.hpp"

#include "clock.hpp"
#include "core/algorithms.hpp"
#include "core/shards.hpp"
#include "lock_waits.hpp"
#include "state/held_shards.hpp"
#include "stats/stats.hpp"

namespace pg_ratelimit {
namespace {

// From the second attempt on the row is locked, so a second attempt settles unless the row keeps being
// deleted and re-inserted under us; the bound only guards against a livelock.
constexpr int MAX_ATTEMPTS = 8;

// Lost races retried by the current settle() call, for its statistics (stats.hpp).
int lost_races = 0;

[[noreturn]] void unsettled() {
    ereport(ERROR,
            (errcode(ERRCODE_T_R_SERIALIZATION_FAILURE),
             errmsg("could not settle concurrent updates of a rate limit key"), errhint("Retry the transaction.")));
    pg_unreachable();
}

const char *write_action(SettleMode mode) {
    return mode == SettleMode::refund ? "refund rate limit units" : "consume rate limit units";
}

// One attempt on one shard's row: read it (locking the newest version after a lost race under READ
// COMMITTED), decide, write. `decided` gets the decision; `stored` and `found` what it was made from.
// Returns false for a lost race.
bool attempt(const StateAccess &access, StateHandle *handle, int16 shard, int attempt_number, const core::Limit &limit,
             SettleMode mode, double cost, bool reserve, core::Micros origin, core::Micros max_wait,
             core::Outcome *decided, core::State *stored, bool *found) {
    *found = access.fetch(handle, shard, stored);
    if (*found && attempt_number > 0 && !IsolationUsesXactSnapshot())
        *found = access.lock_latest(handle, shard, stored);
    if (handle->stale_definition) return true;  // nothing decided: settle() reports it
    const core::State *current = *found ? stored : nullptr;
    const core::Micros now = clock_now();  // after the row lock: a waiter decides at its own turn
    *decided = mode == SettleMode::refund ? core::refund(limit, current, now, cost, origin)
               : mode == SettleMode::take ? core::take(limit, current, now, cost, origin)
               : reserve && max_wait < core::MAX_DURATION
                   ? core::reserve_within(limit, current, now, cost, max_wait, origin)
                   : core::request(limit, current, now, cost, reserve, origin);
    if (mode == SettleMode::check || !decided->write) {
        if (!*found) access.rely_on_absence(handle, shard);
        return true;
    }
    if (access.transactional) require_writable_transaction(write_action(mode));
    handle->decided_at = now;
    return *found ? access.update(handle, shard, decided->next) == WriteResult::written
                  : access.insert(handle, shard, decided->next);
}

// Settles on one shard's row, attempt after attempt until one is not a lost race. `stored` and `found`
// get the row the decision was made from.
core::Outcome settle_row(const StateAccess &access, StateHandle *handle, int16 shard, const core::Limit &limit,
                         SettleMode mode, double cost, bool reserve, core::Micros origin, core::Micros max_wait,
                         core::State *stored, bool *found) {
    for (int number = 0; number < MAX_ATTEMPTS; ++number) {
        core::Outcome decided;
        if (attempt(access, handle, shard, number, limit, mode, cost, reserve, origin, max_wait, &decided, stored,
                    found)) {
            lost_races += number;
            return decided;
        }
    }
    unsettled();
}

// A sharded limit (core/shards.hpp): peek at every shard, choose one, settle on it, and report the key's
// figures across shards. A call that loses the race for its shard stays on it (locking its newest version
// under READ COMMITTED) rather than choosing again: a call holding one shard's row lock must never wait for
// another's, or two calls crossing over two shards would deadlock.
core::Outcome settle_sharded(const StateAccess &access, StateHandle *handle, const core::Limit &limit, SettleMode mode,
                             double cost, bool reserve, core::Micros origin, core::Micros max_wait) {
    const core::Limit shard = core::shard_limit(limit);
    const int count = limit.shards;
    ShardRow rows[core::MAX_SHARDS];
    core::ShardView views[core::MAX_SHARDS];
    const int peeked = access.peek(handle, rows, core::MAX_SHARDS);
    if (handle->stale_definition) return core::Outcome{};
    for (int i = 0; i < peeked; ++i) {
        // Rows of shards beyond the count cannot exist: redefining the count deletes the key's rows.
        if (rows[i].shard < 0 || rows[i].shard >= count) continue;
        views[rows[i].shard] = core::ShardView{rows[i].state, true, rows[i].busy};
    }
    const core::Micros now = clock_now();
    // A transaction that wrote one of the key's shards may not wait for another's (held_shards.hpp).
    const bool may_wait = !access.transactional || !holds_key_shard(handle->target);
    // A take goes where a reservation of the same cost would: the fullest shards first.
    const bool reserving = reserve || mode == SettleMode::take;
    const int chosen = mode == SettleMode::refund
                           ? core::choose_shard_for_refund(shard, views, count, now, origin, may_wait)
                           : core::choose_shard_for_request(shard, views, count, now, cost, reserving, origin,
                                                            pg_prng_uint64(&pg_global_prng_state), may_wait);
    if (chosen < 0) {
        // A refund, and no shard has a row: every shard is full, nothing to give back.
        const core::Outcome full = core::refund(shard, nullptr, now, cost, origin);
        return core::combine_shards(shard, views, count, 0, full, now, cost, reserve, true, origin);
    }
    core::State stored;
    bool found = false;
    const core::Outcome decided = settle_row(access, handle, static_cast<int16>(chosen), shard, mode, cost, reserve,
                                             origin, max_wait, &stored, &found);
    if (access.transactional && mode != SettleMode::check && decided.write) remember_key_shard(handle->target);
    // The figures of the other shards come from the peek, of the chosen one from what it decided on.
    views[chosen] = found ? core::ShardView{stored, true, false} : core::ShardView{};
    // A take reports like a refund: always allowed, retry_after until every shard is out of debt.
    return core::combine_shards(shard, views, count, chosen, decided, clock_now(), cost, reserve,
                                mode == SettleMode::refund || mode == SettleMode::take, origin);
}

}  // namespace

core::Outcome settle(const StateTarget &target, const core::Limit &limit, SettleMode mode, double cost, bool reserve,
                     core::Micros origin, core::Micros max_wait, bool *stale_definition) {
    StateHandle handle;
    handle.stale_definition = false;
    state_access_open(target, &handle);
    const StateAccess &access = *handle.access;
    lost_races = 0;
    core::Outcome outcome;
    const auto decide = [&] {
        core::State stored;
        bool found = false;
        outcome = limit.shards > 1
                      ? settle_sharded(access, &handle, limit, mode, cost, reserve, origin, max_wait)
                      : settle_row(access, &handle, 0, limit, mode, cost, reserve, origin, max_wait, &stored, &found);
    };
    // A table key's row may be held by another transaction (a request not committed yet): the wait for it
    // is bounded (lock_waits.hpp). Memory entries are never held across transactions.
    if (access.transactional)
        with_bounded_lock_waits(WaitFor{DatumGetTextPP(target.limit_name), DatumGetTextPP(target.key)}, decide);
    else
        decide();
    access.close(&handle);
    // A memory entry of other numbers of the limit: nothing was decided (decide_key reads it again).
    *stale_definition = handle.stale_definition;
    if (handle.stale_definition) return core::Outcome{};
    // Shadow mode: the denial was decided (and wrote nothing); the caller is let through, told so. Its
    // retry_after stays for rate_limit_enforce's notice; the decision shows 0 (decision_values). A
    // reservation taken into debt is recorded as usual but never makes the caller wait.
    if (limit.shadow && !outcome.allowed) {
        outcome.allowed = true;
        outcome.shadow_denied = true;
    } else if (limit.shadow && reserve) {
        outcome.retry_after = 0;
    }
    stats_count(DatumGetTextPP(target.limit_name), mode, reserve, cost, outcome, lost_races);
    return outcome;
}

}  // namespace pg_ratelimit
