// Concurrency limits: the band arithmetic, the lock-tag bits and the decision of core/leases.hpp, and the
// rules validate_limit applies to them.
#include "core/leases.hpp"

#include <gtest/gtest.h>

#include <set>
#include <string>

#include "core/algorithms.hpp"
#include "core/rescale.hpp"
#include "core/validate.hpp"
#include "support.hpp"

namespace pg_ratelimit::core {
namespace {

constexpr Micros kHour = Micros{3600} * 1000000;
constexpr Micros kHalfHour = kHour / 2;

Limit Concurrency(double slots) {
    Limit limit;
    limit.algorithm = Algorithm::concurrency;
    limit.rate = slots;
    limit.capacity = slots;
    limit.period = kHour;
    limit.max_reserved = 0;
    return limit;
}

TEST(LeaseValidation, WholeSlotsWithinTheCap) {
    EXPECT_EQ(validate_limit(Concurrency(1)), LimitProblem::none);
    EXPECT_EQ(validate_limit(Concurrency(MAX_LEASE_SLOTS)), LimitProblem::none);
    EXPECT_EQ(validate_limit(Concurrency(MAX_LEASE_SLOTS + 1)), LimitProblem::concurrency_slots);
    EXPECT_EQ(validate_limit(Concurrency(2.5)), LimitProblem::concurrency_slots);
    EXPECT_EQ(validate_limit(Concurrency(0.5)), LimitProblem::concurrency_slots);
}

TEST(LeaseValidation, NothingOfARateApplies) {
    Limit limit = Concurrency(3);
    limit.capacity = 4;
    EXPECT_EQ(validate_limit(limit), LimitProblem::concurrency_shape);
    limit = Concurrency(3);
    limit.max_reserved = 1;
    EXPECT_EQ(validate_limit(limit), LimitProblem::concurrency_shape);
    limit = Concurrency(3);
    limit.shards = 3;
    EXPECT_EQ(validate_limit(limit), LimitProblem::concurrency_shape);
    limit = Concurrency(3);
    limit.storage = Storage::memory;
    EXPECT_EQ(validate_limit(limit), LimitProblem::concurrency_shape);
    limit = Concurrency(3);
    limit.has_start = true;
    EXPECT_EQ(validate_limit(limit), LimitProblem::start_needs_window);
}

TEST(LeaseRows, StrayRowsAreFullAndNeverRescaled) {
    const Limit limit = Concurrency(3);
    EXPECT_TRUE(is_full(limit, State{-5, 0}, 0, 0));
    EXPECT_FALSE(rescale_rewrites(Concurrency(2), limit));
}

TEST(LeaseBands, WidthIsAnEighthRoundedUp) {
    EXPECT_EQ(lease_bands(8 * kHour, 0).width, kHour);
    EXPECT_EQ(lease_bands(9, 0).width, 2);
    EXPECT_EQ(lease_bands(1, 0).width, 1);
}

TEST(LeaseBands, FloorDivisionBefore2000) {
    const LeaseBands bands = lease_bands(8 * kHour, -1);
    EXPECT_EQ(bands.current, -1);
    EXPECT_EQ(bands.into_current, kHour - 1);
}

// A lease counts at least period and at most period + width (+ 8 microseconds of rounding: 9 * ceil(period /
// 8)) after it was taken, wherever in its band.
TEST(LeaseBands, ExpiryBetweenPeriodAndOneBandMore) {
    const Micros period = 8 * kHour + 5;  // not a multiple of 8
    for (Micros taken : {Micros{0}, Micros{1}, kHour / 2, kHour - 1, kHour, 123456789 * Micros{1000}}) {
        const LeaseBands at_take = lease_bands(period, taken);
        const Micros expires = taken + lease_band_expires_in(at_take, at_take.current);
        EXPECT_GE(expires - taken, period) << taken;
        EXPECT_LE(expires - taken, period + at_take.width + 8) << taken;
        // Live (among the 9 bands probed) until then, not after.
        const LeaseBands before = lease_bands(period, expires - 1);
        EXPECT_LE(before.current - at_take.current, LEASE_LIVE_BANDS - 1) << taken;
        const LeaseBands after = lease_bands(period, expires);
        EXPECT_GE(after.current - at_take.current, LEASE_LIVE_BANDS) << taken;
    }
}

// A clock stepped back by less than one band: the lease taken in the band after the current one is among
// those probed (LEASE_FUTURE_BANDS), and counts until a band after the live ones would end.
TEST(LeaseBands, FutureBandCoversAStepBackOfOneBand) {
    const Micros period = 8 * kHour;
    const LeaseBands at_take = lease_bands(period, kHour + 200000);    // 01:00:00.2
    const LeaseBands stepped = lease_bands(period, kHour - 100000);    // 00:59:59.9
    EXPECT_EQ(at_take.current - stepped.current, LEASE_FUTURE_BANDS);  // probed: current + 1
    EXPECT_EQ(lease_band_expires_in(stepped, at_take.current), 10 * stepped.width - stepped.into_current);
    EXPECT_EQ(LEASE_PROBES_PER_SLOT, 1 + LEASE_LIVE_BANDS + LEASE_FUTURE_BANDS);
}

TEST(LeaseTags, DistinctPerKeySlotAndBand) {
    const std::uint64_t a = lease_identity("ab", 2, "c", 1);
    const std::uint64_t b = lease_identity("a", 1, "bc", 2);
    EXPECT_NE(a, b);
    EXPECT_EQ(a, lease_identity("ab", 2, "c", 1));
    std::set<std::uint64_t> tags;
    for (std::uint32_t slot = 0; slot < 100; ++slot)
        for (std::int64_t band = -5; band < 20; ++band) tags.insert(lease_slot_tag(a, slot, band));
    EXPECT_EQ(tags.size(), 100u * 25u);
}

TEST(LeaseOutcome, AllowedCountsFreeSlotsAfterTheCall) {
    const LeaseBands bands = lease_bands(8 * kHour, 0);
    LeaseTally tally;
    tally_free(&tally, 0);
    tally_transaction_lease(&tally, bands);
    tally_free(&tally, 2);
    EXPECT_EQ(tally.first_free, 0);
    const Outcome transaction = lease_outcome(tally, bands, true, false);
    EXPECT_TRUE(transaction.allowed);
    EXPECT_EQ(transaction.balance, 1);
    EXPECT_EQ(transaction.retry_after, 0);
    EXPECT_EQ(transaction.reset_after, 0);
    const Outcome session = lease_outcome(tally, bands, true, true);
    EXPECT_EQ(session.reset_after, 9 * kHour);
}

TEST(LeaseOutcome, DeniedHintsTheSoonestRelease) {
    const LeaseBands bands = lease_bands(8 * kHour, 8 * kHour + kHalfHour);  // band 8, half in
    LeaseTally tally;
    tally_session_lease(&tally, bands, 0);  // the oldest live band: expires at 9 h, in 30 min
    tally_session_lease(&tally, bands, 8);  // the current band: expires at 17 h
    Outcome out = lease_outcome(tally, bands, false, false);
    EXPECT_FALSE(out.allowed);
    EXPECT_EQ(out.balance, 0);
    EXPECT_EQ(out.retry_after, kHalfHour);
    EXPECT_EQ(out.reset_after, 8 * kHour + kHalfHour);
    tally_transaction_lease(&tally, bands);  // a transaction lease: one band
    out = lease_outcome(tally, bands, false, false);
    EXPECT_EQ(out.retry_after, kHalfHour);
    LeaseTally only_transactions;
    tally_transaction_lease(&only_transactions, bands);
    EXPECT_EQ(lease_outcome(only_transactions, bands, false, false).retry_after, kHour);
    EXPECT_EQ(lease_outcome(only_transactions, bands, false, false).reset_after, 0);
}

}  // namespace
}  // namespace pg_ratelimit::core
