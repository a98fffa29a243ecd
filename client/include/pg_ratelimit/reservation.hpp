// Reservations: consume now, give back later if the attempt turns out not to count.
//
// The Stripe pattern for conditional limits ("at most 30 failed logins per hour per IP, while valid
// logins are unlimited"): reserve a unit before authenticating, so an attacker cannot run attempts in
// parallel past the limit, then cancel() the reservation when the login turns out valid.
#pragma once

#include <memory>
#include <pqxx/transaction_base>
#include <string>

#include "pg_ratelimit/decision.hpp"

namespace pg_ratelimit {

namespace detail {
class LimiterCore;
}

enum class ReserveMode {
    // Granted only if the units are available now (rate_limit_request with reserve => false).
    immediate,
    // May go into debt up to the limit's max_reserved (reserve => true): the units are promised to this
    // caller, and decision().retry_after says how long to wait before doing the work. Fair scheduling
    // without retries, as in Convex's rate limiter.
    scheduled,
};

// The result of Limiter::reserve. Move-only; not thread-safe (use one from one thread at a time).
//
// Destroying a reservation without cancel() KEEPS the consumption: that is the normal outcome of a
// reservation (the attempt counted). cancel() is idempotent: only the first call refunds.
//
// A reservation made inside the caller's transaction (Limiter::reserve(tx, ...)) consumed its units in
// that transaction, so it can only be cancelled inside a transaction, with cancel(tx):
//  - in the same transaction: consumption and refund then commit or roll back together;
//  - or in a later one, after the first committed.
// It must not be refunded on a separate connection while the first transaction is open: that
// connection would wait for the row lock the first transaction holds (a deadlock if the same thread
// waits for both), and if the first transaction then rolled back, the refund would hand out units that
// were never consumed. cancel() without a transaction therefore throws std::logic_error for them.
// Because run_transaction may run the transaction function again, make and cancel such a reservation
// inside the same function, so each attempt has its own.
class [[nodiscard]] Reservation {
  public:
    Reservation(Reservation &&other) noexcept;
    Reservation &operator=(Reservation &&other) noexcept;
    Reservation(const Reservation &) = delete;
    Reservation &operator=(const Reservation &) = delete;
    ~Reservation();  // keeps the consumption (see above)

    // The units were granted (for ReserveMode::scheduled possibly ahead of time: see retry_after).
    [[nodiscard]] bool ok() const noexcept { return decision_.allowed; }
    // The server's decision at reservation time (headers() for a 429 when !ok()).
    [[nodiscard]] const Decision &decision() const noexcept { return decision_; }
    [[nodiscard]] bool cancelled() const noexcept { return cancelled_; }
    // Made inside a caller's transaction: only cancel(tx) may cancel it.
    [[nodiscard]] bool in_transaction() const noexcept { return in_transaction_; }

    // Refunds the reserved units in the Limiter's own short transaction (retried on 40001/40P01 like any
    // pooled call). Returns true if this call refunded, false if there was nothing to do (not ok(),
    // already cancelled, moved from). Thread-safe with respect to other Limiter calls.
    // Throws: std::logic_error if in_transaction(); pg_ratelimit::Error (e.g. UnknownLimit if the limit
    // was dropped meanwhile) and the pqxx exceptions of Limiter calls, after which the reservation is
    // still uncancelled and cancel() may be called again, except InDoubt (a pqxx::in_doubt_error): the
    // refund may have taken effect (its COMMIT was lost, or its connection broke after a memory limit's
    // refund ran), so the reservation counts as cancelled (a second refund could mint units).
    bool cancel();

    // Refunds the reserved units inside tx (does not retry: run it under run_transaction). The
    // reservation counts as cancelled once the refund statement succeeded; if tx then rolls back, the
    // refund rolls back with it while the reservation stays marked (see the class comment).
    // Returns and throws as cancel(), without the logic_error.
    bool cancel(pqxx::transaction_base &tx);

    // Reserve, then settle: trues the reservation up to the work's actual cost in one call
    // (rate_limit_settle, with the reserved cost): less gives the difference back (never above capacity),
    // more takes the extra whatever the balance, into debt beyond max_reserved if it must (the work is
    // done). Returns the key's decision afterwards (allowed is always true; retry_after is how long the
    // key stays in debt). A settled reservation is done: cancel() and settle() then do nothing more
    // (cancel() returns false; settle() throws std::logic_error, as it does for a reservation that is not
    // ok(), cancelled or moved from). actual: 0, or between 1e-9 and 1e12 (InvalidArgument otherwise).
    // Needs EXECUTE on rate_limit_settle (not granted to PUBLIC, like rate_limit_refund). The pooled form
    // retries like cancel() (after InDoubt the reservation counts as settled) and throws std::logic_error
    // if in_transaction(); settle(tx) runs inside tx.
    Decision settle(double actual);
    Decision settle(pqxx::transaction_base &tx, double actual);
    [[nodiscard]] bool settled() const noexcept { return settled_; }

    // A shadow limit would have denied it (decision().shadow_denied): ok(), but no unit was taken, so
    // cancel() gives nothing back (returns false) and settle() records nothing, neither the estimate nor
    // the actual cost: a real limit would have turned the work away.
    [[nodiscard]] bool holds_nothing() const noexcept { return decision_.shadow_denied; }

  private:
    friend class Limiter;
    Reservation(std::shared_ptr<detail::LimiterCore> core, std::string key, double cost, Decision decision,
                bool in_transaction);

    std::shared_ptr<detail::LimiterCore> core_;  // keeps the pool alive for a later cancel()
    std::string key_;
    double cost_ = 0;
    Decision decision_;
    bool in_transaction_ = false;
    bool cancelled_ = false;
    bool settled_ = false;
};

}  // namespace pg_ratelimit
