#include "settle.hpp"

#include "clock.hpp"
#include "core/algorithms.hpp"

namespace pg_ratelimit {
namespace {

// From the second attempt on the row is locked, so a second attempt settles unless the row keeps being
// deleted and re-inserted under us; the bound only guards against a livelock.
constexpr int MAX_ATTEMPTS = 8;

}  // namespace

core::Outcome settle(const StateTarget &target, const core::Limit &limit, SettleMode mode, double cost, bool reserve,
                     core::Micros origin) {
    StateHandle handle;
    state_access_open(target, &handle);
    const StateAccess &access = *handle.access;
    for (int attempt = 0; attempt < MAX_ATTEMPTS; ++attempt) {
        core::State stored;
        bool found = access.fetch(&handle, &stored);
        if (found && attempt > 0 && !IsolationUsesXactSnapshot()) found = access.lock_latest(&handle, &stored);
        const core::State *current = found ? &stored : nullptr;
        const core::Micros now = clock_now();  // after the row lock: a waiter decides at its own turn
        const core::Outcome outcome = mode == SettleMode::refund
                                          ? core::refund(limit, current, now, cost, origin)
                                          : core::request(limit, current, now, cost, reserve, origin);
        if (mode == SettleMode::check || !outcome.write) {
            access.close(&handle);
            return outcome;
        }
        require_writable_transaction(mode == SettleMode::refund ? "refund rate limit units"
                                                                : "consume rate limit units");
        const bool written =
            found ? access.update(&handle, outcome.next) == WriteResult::written : access.insert(&handle, outcome.next);
        if (written) {
            access.close(&handle);
            return outcome;
        }
    }
    ereport(ERROR,
            (errcode(ERRCODE_T_R_SERIALIZATION_FAILURE),
             errmsg("could not settle concurrent updates of a rate limit key"), errhint("Retry the transaction.")));
    pg_unreachable();
}

}  // namespace pg_ratelimit
