// Reservations: consume now, cancel() to refund; pooled and inside the caller's transaction.
#include <gtest/gtest.h>

#include <pg_ratelimit/client.hpp>
#include <pqxx/pqxx>

#include "support.hpp"

namespace pr = pg_ratelimit;
using std::chrono::seconds;

namespace {

class ReservationTest : public test_support::ServerTest {
  protected:
    void SetUp() override {
        ServerTest::SetUp();
        limit = test_support::define_limit("failed_login", 3, "1 hour", 3);
        ip = test_support::unique_key("ip");
        limiter = std::make_unique<pr::Limiter>(test_support::conninfo());
    }
    std::int64_t remaining() { return test_support::units_left(*limiter, ip, limit); }

    std::string limit;
    std::string ip;
    std::unique_ptr<pr::Limiter> limiter;
};

}  // namespace

TEST_F(ReservationTest, CancelRefundsOnceOnly) {
    pr::Reservation r = limiter->reserve(ip, limit);
    ASSERT_TRUE(r.ok());
    EXPECT_EQ(r.decision().remaining, 2);
    EXPECT_EQ(remaining(), 2);
    EXPECT_TRUE(r.cancel());
    EXPECT_TRUE(r.cancelled());
    EXPECT_EQ(remaining(), 3);
    EXPECT_FALSE(r.cancel());  // idempotent: no second refund
    EXPECT_EQ(remaining(), 3);
}

TEST_F(ReservationTest, DestroyedWithoutCancelKeepsTheConsumption) {
    { pr::Reservation r = limiter->reserve(ip, limit, 2); }
    EXPECT_EQ(remaining(), 1);
}

// The Stripe pattern: valid logins give their unit back, so only failures count against the IP.
TEST_F(ReservationTest, ConditionalLimitCountsOnlyFailedAttempts) {
    auto attempt = [&](bool valid_password) {
        pr::Reservation r = limiter->reserve(ip, limit);
        if (!r.ok()) return 429;
        if (valid_password) {
            r.cancel();
            return 200;
        }
        return 401;
    };
    for (int i = 0; i < 10; ++i) EXPECT_EQ(attempt(true), 200);
    for (int i = 0; i < 3; ++i) EXPECT_EQ(attempt(false), 401);
    EXPECT_EQ(attempt(false), 429);
    EXPECT_EQ(attempt(true), 429);  // once exhausted, nobody gets in from this IP
}

TEST_F(ReservationTest, DeniedReservationHasNothingToCancel) {
    (void)limiter->request(ip, limit, 3);
    pr::Reservation r = limiter->reserve(ip, limit);
    EXPECT_FALSE(r.ok());
    EXPECT_GT(r.decision().retry_after, seconds{1000});
    EXPECT_EQ(r.decision().headers().back().name, "Retry-After");
    EXPECT_FALSE(r.cancel());
    EXPECT_EQ(remaining(), 0);
}

TEST_F(ReservationTest, MovedReservationCancelsOnceAndOutlivesTheLimiter) {
    pr::Reservation a = limiter->reserve(ip, limit);
    pr::Reservation b = std::move(a);
    EXPECT_FALSE(a.cancel());  // NOLINT(bugprone-use-after-move,clang-analyzer-cplusplus.Move): inert
    EXPECT_FALSE(a.ok());      // NOLINT(bugprone-use-after-move,clang-analyzer-cplusplus.Move)
    limiter.reset();           // the reservation keeps the pool alive
    EXPECT_TRUE(b.cancel());
    pr::Limiter fresh{test_support::conninfo()};
    EXPECT_EQ(test_support::units_left(fresh, ip, limit), 3);
}

TEST_F(ReservationTest, InTransactionReservationCancelsInsideATransactionOnly) {
    auto conn = test_support::connect();
    {
        pqxx::work tx{*conn};
        pr::Reservation r = limiter->reserve(tx, ip, limit);
        ASSERT_TRUE(r.ok());
        EXPECT_TRUE(r.in_transaction());
        EXPECT_THROW(r.cancel(), std::logic_error);  // would wait for tx's own row lock
        EXPECT_FALSE(r.cancelled());
        EXPECT_TRUE(r.cancel(tx));  // same transaction: both commit together
        EXPECT_FALSE(r.cancel(tx));
        tx.commit();
    }
    EXPECT_EQ(remaining(), 3);

    // Made in one transaction, cancelled in a later one after the first committed.
    pqxx::work first{*conn};
    pr::Reservation later = limiter->reserve(first, ip, limit);
    first.commit();
    EXPECT_EQ(remaining(), 2);
    pqxx::work second{*conn};
    EXPECT_TRUE(later.cancel(second));
    second.commit();
    EXPECT_EQ(remaining(), 3);
}

TEST_F(ReservationTest, InTransactionReservationRollsBackWithItsTransaction) {
    auto conn = test_support::connect();
    {
        pqxx::work tx{*conn};
        pr::Reservation r = limiter->reserve(tx, ip, limit, 3);
        EXPECT_TRUE(r.ok());
    }  // rolled back
    EXPECT_EQ(remaining(), 3);
}

TEST_F(ReservationTest, ReservationInsideRunTransaction) {
    auto conn = test_support::connect();
    const int status = pr::run_transaction(*conn, pr::isolation::serializable, [&](pqxx::work &tx) {
        pr::Reservation r = limiter->reserve(tx, ip, limit);
        if (!r.ok()) return 429;
        const bool valid = true;  // the application's check, in the same transaction
        if (valid) r.cancel(tx);
        return 200;
    });
    EXPECT_EQ(status, 200);
    EXPECT_EQ(remaining(), 3);
}

// ReserveMode::scheduled goes into debt (bounded by max_reserved) and says when the work may run.
TEST_F(ReservationTest, ScheduledReservationWaitsItsTurn) {
    const std::string paced = test_support::define_limit("paced", 1, "1 minute", 1, 2);
    pr::Reservation now = limiter->reserve(ip, paced, 1, pr::ReserveMode::scheduled);
    ASSERT_TRUE(now.ok());
    EXPECT_EQ(now.decision().retry_after, std::chrono::microseconds{0});
    pr::Reservation next = limiter->reserve(ip, paced, 1, pr::ReserveMode::scheduled);
    ASSERT_TRUE(next.ok());
    EXPECT_GT(next.decision().retry_after, seconds{50});
    EXPECT_LE(next.decision().retry_after, seconds{60});
    pr::Reservation after = limiter->reserve(ip, paced, 1, pr::ReserveMode::scheduled);
    ASSERT_TRUE(after.ok());
    EXPECT_GT(after.decision().retry_after, seconds{110});
    // max_reserved = 2 units of debt: a third one ahead is refused, and immediate mode never goes into debt.
    EXPECT_FALSE(limiter->reserve(ip, paced, 1, pr::ReserveMode::scheduled).ok());
    EXPECT_FALSE(limiter->reserve(ip, paced).ok());
    // Cancelling a scheduled reservation pays back its debt.
    EXPECT_TRUE(after.cancel());
    EXPECT_TRUE(limiter->reserve(ip, paced, 1, pr::ReserveMode::scheduled).ok());
}
