#include "lock_waits.hpp"

#include "message_text.hpp"

namespace pg_ratelimit {
namespace {

int lock_wait_ms = 1000;

// The bound lock_waits_begin set, and whether it was ours rather than lock_timeout's.
int bound_in_force = 0;
bool ours_in_force = false;

}  // namespace

void lock_waits_init() {
    DefineCustomIntVariable(
        "pg_ratelimit.lock_wait",
        "How long a rate limit call waits for another transaction's hold on a key or on its limit.",
        "A request waits for a transaction that requested the same key and has not ended, and for one that is "
        "redefining its limit. Beyond this many milliseconds the call fails with SQLSTATE 55P03. 0: no bound "
        "of its own (lock_timeout still applies).",
        &lock_wait_ms, 1000, 0, INT_MAX, PGC_USERSET, GUC_UNIT_MS, nullptr, nullptr, nullptr);
}

int lock_waits_begin(int cap_ms) {
    const int previous = LockTimeout;
    const int ours = cap_ms > 0 && (lock_wait_ms <= 0 || cap_ms < lock_wait_ms) ? cap_ms : lock_wait_ms;
    ours_in_force = ours > 0 && (LockTimeout <= 0 || ours <= LockTimeout);
    bound_in_force = ours_in_force ? ours : LockTimeout;
    LockTimeout = bound_in_force;
    return previous;
}

void lock_waits_end(int previous) { LockTimeout = previous; }

bool report_lock_wait_expired(const ErrorData *, const WaitFor &what) {
    if (!ours_in_force) return false;
    const char *limit = clipped_text(text_to_cstring(what.limit_name));
    if (what.key != nullptr)
        ereport(ERROR,
                (errcode(ERRCODE_LOCK_NOT_AVAILABLE),
                 errmsg("rate limit key \"%s\" of \"%s\" is held by another transaction",
                        clipped_text(text_to_cstring(what.key)), limit),
                 errdetail("The call waited %d ms (pg_ratelimit.lock_wait) for a transaction that requested the key "
                           "and has not ended.",
                           bound_in_force),
                 errhint("Such a transaction is usually idle in transaction (pg_stat_activity); "
                         "idle_in_transaction_session_timeout ends them. Limits with storage 'memory' hold no key "
                         "across transactions.")));
    if (what.any_key)
        ereport(ERROR, (errcode(ERRCODE_LOCK_NOT_AVAILABLE),
                        errmsg("a key of rate limit \"%s\" is held by another transaction", limit),
                        errdetail("The change waited %d ms (pg_ratelimit.lock_wait) for a transaction that requested "
                                  "one of the limit's keys and has not ended; requests on the limit were not held up.",
                                  bound_in_force),
                        errhint("Such a transaction is usually idle in transaction (pg_stat_activity); "
                                "idle_in_transaction_session_timeout ends them. Or wait longer: SET "
                                "pg_ratelimit.lock_wait for this session.")));
    ereport(ERROR,
            (errcode(ERRCODE_LOCK_NOT_AVAILABLE), errmsg("rate limit \"%s\" is held by another transaction", limit),
             errdetail("The call waited %d ms (pg_ratelimit.lock_wait) for a transaction that is redefining, "
                       "dropping or overriding the limit (or, for such a change, for a transaction committing keys "
                       "of the limit, or prepared after writing some).",
                       bound_in_force),
             errhint("Find it in pg_locks (advisory locks with objsubid 21068), pg_stat_activity and "
                     "pg_prepared_xacts.")));
    pg_unreachable();
}

}  // namespace pg_ratelimit
