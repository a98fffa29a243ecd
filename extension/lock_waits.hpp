// How long a call waits for another transaction's hold on what it needs: a key's row (a request that has
// not committed yet), or its limit's lock (a redefinition in progress, or for a redefinition, the
// transactions still open that wrote the limit's keys: limit_lock.hpp).
//
// Any role may call rate_limit_request, and a transaction that requested a key and stays open holds the
// key's row lock until it ends: without a bound, every other request on that key (rate_limit_request_many:
// on a million keys at once, keys not created yet included) would wait for as long as that session
// pleases. pg_ratelimit.lock_wait (milliseconds, default 1000, 0 = no bound of its own) bounds each such
// wait; one that runs out fails with SQLSTATE 55P03 (lock_not_available) and a message naming the key or
// the limit, never a denial (the key is not exhausted). PostgreSQL's own lock_timeout, when shorter, stays
// in force; idle_in_transaction_session_timeout ends the sessions that hold keys for good. Memory limits
// hold nothing across transactions and never wait for one.
#pragma once

#include "postgres_headers.hpp"

namespace pg_ratelimit {

void lock_waits_init();

// What a bounded wait was for, for the error's message.
struct WaitFor {
    const text *limit_name;
    const text *key;       // nullptr: the limit's lock, or (any_key) whichever of its keys is held
    bool any_key = false;  // a change of the limit waiting for the rows of its keys
};

// PostgreSQL's lock timeout while `fn` runs: the shortest of lock_timeout, pg_ratelimit.lock_wait and
// cap_ms (0 in all: none; cap_ms 0: no cap). Returns the previous value, for lock_waits_end.
int lock_waits_begin(int cap_ms = 0);
void lock_waits_end(int previous);
// ERROR 55P03 for a wait that ran out (edata: PostgreSQL's "canceling statement due to lock timeout"), when
// pg_ratelimit.lock_wait was the bound in force; false otherwise (the caller re-throws the error as it was).
bool report_lock_wait_expired(const ErrorData *edata, const WaitFor &what);

// Runs fn() under lock_waits_begin/_end, turning an expired wait into report_lock_wait_expired's error.
// fn must be trivially destructible (a lambda capturing by reference): an error longjmps out of it.
template <typename Fn>
void with_bounded_lock_waits(const WaitFor &what, const Fn &fn, int cap_ms = 0) {
    const int previous = lock_waits_begin(cap_ms);
    const MemoryContext caller_context = CurrentMemoryContext;
    PG_TRY();
    { fn(); }
    PG_CATCH();
    {
        lock_waits_end(previous);
        MemoryContextSwitchTo(caller_context);
        ErrorData *edata = CopyErrorData();
        if (edata->sqlerrcode != ERRCODE_LOCK_NOT_AVAILABLE) PG_RE_THROW();
        FlushErrorState();
        if (!report_lock_wait_expired(edata, what)) ReThrowError(edata);
    }
    PG_END_TRY();
    lock_waits_end(previous);
}

// with_bounded_lock_waits for a function that returns a value (trivially copyable).
template <typename Fn>
auto with_bounded_lock_waits_returning(const WaitFor &what, const Fn &fn) {
    decltype(fn()) result{};
    with_bounded_lock_waits(what, [&] { result = fn(); });
    return result;
}

}  // namespace pg_ratelimit
