// libFuzzer target over the pure algorithm core (extension/core/). One key under one limit is driven by
// a sequence of requests, checks, reservations, refunds, redefinitions, row deletions and clock moves
// decoded from the input (fuzz_input.hpp), and after every operation the harness checks what the core
// documents:
// - validation: validate_limit / validate_cost reject exactly what an independent predicate rejects
//   (NaN, infinities, <= 0, above the bounds, a start on an algorithm without a grid, an algorithm's own
//   constraints such as the sliding window's capacity = rate, a jitter out of range); rejected input
//   changes nothing, as the SQL functions raise an error first;
// - every double finite; retry_after and reset_after within [0, MAX_DURATION]; the balance never above
//   capacity (+ tolerance); a plain request never leaves debt, a reservation never more than max_reserved;
//   what a call stores reads back (core::balance_at) as the balance it reports, evaluated at the same
//   instant as before the write (the key's own instant when the clock is behind it): exactly for the
//   token bucket and fixed window, which store {balance, max(now, stored ts)}, to rounding for GCRA, and
//   never more, at most one quantum less, for the sliding window (algorithms_under_test.hpp);
//   a jittered retry_after lies in [retry_after, retry_after + jitter];
// - admission bound: units admitted in any stretch of key time [a, b] within one definition, net of
//   refunds, never exceed capacity - balance left at b + the algorithm's refill over [a, b]
//   (algorithms_under_test.hpp), up to float rounding. Key time is the latest instant the key was
//   written at or judged full at by rate_limit_cleanup (the core never evaluates a key earlier than its
//   own instant, or, GCRA, evaluates it poorer), so a clock stepping back, before or after a cleanup,
//   may mint nothing. Key time moves back only where the key's state itself drops it: a row judged full
//   by cleanup before its last write (the windows' rows name only their window), a GCRA row made full by
//   a refund while the clock is behind, a row rewritten by a redefinition on another grid; the stretches
//   then start afresh;
//   Cleanup judges a row at now - CLEANUP_MARGIN, as the glue does, and after a deletion the clock never
//   steps back behind the instant judged (the documented limit: beyond the margin, a deleted row's key
//   time is lost);
// - redefinitions carry keys over as rate_limit_define does (core/rescale.hpp, the rule drawn from the
//   input): a rewritten key holds its balance scaled by the capacities' ratio (proportional) or as it was
//   (as_is; a sliding window the amount it had used), never more;
// - retry_after: a denied request made again at now + retry_after (same state, same definition)
//   succeeds, and at now + retry_after - 1 us it is still denied; a reservation's retry_after is when
//   its debt is repaid, not 1 us earlier;
//   reset_after likewise for is_full; refunds never raise the balance above capacity;
// - is_full(row) agrees with a check of a request for the whole capacity;
// - calendar limits (fixed windows of days, weeks or months in a time zone: fuzz_zones.hpp): now lies in the
//   window calendar_index gives it, between calendar_start of that window and of the next; the window opens
//   where the zone reads local midnight of its first day (a date the harness counts itself); the microsecond
//   before an opening belongs to the window before. Their admission bound counts the windows opening in a
//   stretch.
// On a violation it prints the invariant, the limit, the clock, the key and the operation, then aborts
// (libFuzzer keeps the input). PG_RATELIMIT_FUZZ_TRACE=1 prints every operation of a replayed input:
//   PG_RATELIMIT_FUZZ_TRACE=1 build/fuzz/core_fuzzer crash-<sha1>
#include <algorithm>
#include <array>
#include <cfloat>
#include <cinttypes>
#include <cmath>
#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>

#include "algorithms_under_test.hpp"
#include "calendar_dates.hpp"
#include "core/algorithms.hpp"
#include "core/calendar.hpp"
#include "core/refill.hpp"
#include "core/rescale.hpp"
#include "core/validate.hpp"
#include "fuzz_input.hpp"
#include "fuzz_zones.hpp"

namespace pg_ratelimit::fuzz {
namespace {

using core::Outcome;
using core::State;

constexpr int kMaxOps = 256;
// Float rounding the core may make in one operation (refill, subtraction, cap): a few ulps of the largest
// magnitude involved, and never less than a few of the smallest double (denormal units round
// absolutely). The admission bound allows this much per operation in the stretch.
constexpr long double kRoundingPerOp = 8 * DBL_EPSILON;
constexpr long double kDenormalRoundingPerOp = 4 * DBL_TRUE_MIN;

bool g_trace = false;

enum class Op : std::uint8_t {
    request,
    reserve,
    check,
    refund,
    redefine,
    advance,
    step_back,
    to_boundary,
    wait_retry,
    cleanup,
    reset,
};
// Repeated entries weight the choice.
constexpr Op kOpTable[] = {Op::request,    Op::request,    Op::request,  Op::reserve, Op::reserve,   Op::check,
                           Op::refund,     Op::advance,    Op::advance,  Op::advance, Op::step_back, Op::to_boundary,
                           Op::wait_retry, Op::wait_retry, Op::redefine, Op::cleanup, Op::reset};

const char *op_name(Op op) {
    switch (op) {
        case Op::request:
            return "request";
        case Op::reserve:
            return "request(reserve)";
        case Op::check:
            return "check";
        case Op::refund:
            return "refund";
        case Op::redefine:
            return "redefine";
        case Op::advance:
            return "advance";
        case Op::step_back:
            return "step_back";
        case Op::to_boundary:
            return "to_boundary";
        case Op::wait_retry:
            return "wait_retry";
        case Op::cleanup:
            return "cleanup";
        case Op::reset:
            return "reset";
    }
    return "?";
}

const char *unit_name(core::CalendarUnit unit) {
    switch (unit) {
        case core::CalendarUnit::day:
            return "days";
        case core::CalendarUnit::week:
            return "weeks";
        case core::CalendarUnit::month:
            return "months";
        case core::CalendarUnit::none:
            break;
    }
    return "none";
}

void print_limit(const char *label, const Limit &l, Micros origin) {
    // tolerance() assumes a valid limit (it divides by the period).
    const bool valid = core::validate_limit(l) == core::LimitProblem::none;
    std::fprintf(stderr,
                 "  %s: %s rate=%.17g period=%" PRId64 " capacity=%.17g max_reserved=%.17g start=%s%" PRId64
                 " origin=%" PRId64 " tolerance=%.17g%s\n",
                 label, algorithm_under_test(l.algorithm).name, l.rate, l.period, l.capacity, l.max_reserved,
                 l.has_start ? "" : "(none) ", l.start, origin, valid ? core::tolerance(l) : 0.0,
                 valid ? "" : " (invalid)");
    if (l.calendar.unit == core::CalendarUnit::none) return;
    std::fprintf(stderr, "  calendar: %d %s%s\n", static_cast<int>(l.calendar.count), unit_name(l.calendar.unit),
                 l.calendar.zone == nullptr ? " (no zone)" : "");
    if (l.calendar.zone != nullptr) static_cast<const FuzzZone *>(l.calendar.zone->data)->print("zone");
}

// --- validation --------------------------------------------------------------------------------------

bool valid_units(double units) { return std::isfinite(units) && units >= core::MIN_UNITS && units <= core::MAX_UNITS; }

unsigned problem_bit(core::LimitProblem problem) { return 1U << static_cast<unsigned>(problem); }

// What validate_limit must reject, worked out without it: one bit per LimitProblem.
unsigned expected_problems(const Limit &l) {
    using core::LimitProblem;
    unsigned problems = 0;
    if (!valid_units(l.rate)) problems |= problem_bit(LimitProblem::rate);
    if (l.period <= 0) problems |= problem_bit(LimitProblem::period);
    if (l.period > core::MAX_PERIOD) problems |= problem_bit(LimitProblem::period_too_long);
    if (!valid_units(l.capacity)) problems |= problem_bit(LimitProblem::capacity);
    if (!(l.max_reserved == kInf || (l.max_reserved >= 0 && l.max_reserved <= core::MAX_UNITS)))
        problems |= problem_bit(LimitProblem::max_reserved);
    const AlgorithmUnderTest &algorithm = algorithm_under_test(l.algorithm);
    if (algorithm.capacity_is_rate && !(l.capacity == l.rate)) problems |= problem_bit(LimitProblem::sliding_capacity);
    if (algorithm.no_reservations && !(l.max_reserved == 0))
        problems |= problem_bit(LimitProblem::sliding_reservations);
    if (l.period < algorithm.min_period) problems |= problem_bit(LimitProblem::sliding_period);
    if (l.has_start) {
        if (!algorithm.accepts_start) {
            problems |= problem_bit(LimitProblem::start_needs_window);
        } else if (l.start > core::MAX_START_OFFSET || l.start < -core::MAX_START_OFFSET) {
            problems |= problem_bit(LimitProblem::start_out_of_range);
        }
    }
    if (l.jitter < 0 || l.jitter > core::MAX_JITTER) problems |= problem_bit(LimitProblem::jitter);
    if (const core::Calendar &calendar = l.calendar; calendar.unit != core::CalendarUnit::none) {
        if (!algorithm.accepts_calendar) problems |= problem_bit(LimitProblem::calendar_algorithm);
        if (l.has_start) problems |= problem_bit(LimitProblem::calendar_start);
        const std::int32_t most = calendar.unit == core::CalendarUnit::month  ? core::MAX_CALENDAR_MONTHS
                                  : calendar.unit == core::CalendarUnit::week ? core::MAX_CALENDAR_WEEKS
                                                                              : core::MAX_CALENDAR_DAYS;
        if (calendar.count < 1 || calendar.count > most || calendar.zone == nullptr)
            problems |= problem_bit(LimitProblem::calendar_count);
    }
    return problems;
}

// Whether rate_limit_define accepts the limit; aborts if validate_limit disagrees with the predicate.
bool accepted(const Limit &l) {
    const unsigned expected = expected_problems(l);
    const core::LimitProblem problem = core::validate_limit(l);
    const bool agrees = problem == core::LimitProblem::none ? expected == 0 : (expected & problem_bit(problem)) != 0;
    if (!agrees) {
        std::fprintf(stderr, "core fuzzer: INVARIANT VIOLATED: validate_limit rejects what it should\n");
        print_limit("limit", l, 0);
        std::fprintf(stderr, "  validate_limit=%u, expected problems (bit mask)=0x%x\n", static_cast<unsigned>(problem),
                     expected);
        std::abort();
    }
    return expected == 0;
}

// Adds a wait to an instant; false if the result is past PostgreSQL's last timestamp (never checked).
bool later(Micros from, Micros wait, Micros *then) {
    return !__builtin_add_overflow(from, wait, then) && *then < kPgEndTimestamp;
}

Micros clamp_to_pg_range(__int128 t) {
    return static_cast<Micros>(std::clamp<__int128>(t, kPgMinTimestamp, kPgEndTimestamp - 1));
}

// --- one key under one limit ---------------------------------------------------------------------------

// A write to the key, with the running totals before it: the start of the stretches the bound checks.
struct Written {
    long double admitted_before;
    long double refunded_before;
    Micros at;  // key time: the latest instant the key has been written at, after this write
    int cleanups_before;
};

class Run {
  public:
    // `zones` holds the limit's zone (if on a calendar) and the next definition's.
    Run(const Limit &limit, ZoneSlots &zones, std::uint64_t key_hash, Micros now)
        : zones_(zones), key_hash_(key_hash), now_(now) {
        define(limit);
    }

    void step(Bytes &in) {
        ++op_index_;
        op_ = in.pick(kOpTable);
        cost_ = 0;
        reserve_ = false;
        switch (op_) {
            case Op::request:
                decide(in, /*reserve=*/false, /*write=*/true);
                break;
            case Op::reserve:
                decide(in, /*reserve=*/true, /*write=*/true);
                break;
            case Op::check:
                decide(in, /*reserve=*/false, /*write=*/false);
                break;
            case Op::refund:
                give_back(in);
                break;
            case Op::redefine:
                redefine(in);
                break;
            case Op::advance:
                move_clock(static_cast<__int128>(now_) + clock_move(in, limit_));
                break;
            case Op::step_back:
                move_clock(static_cast<__int128>(now_) - clock_move(in, limit_));
                break;
            case Op::to_boundary: {
                // Just around the next boundary of the window grid (the period grid for other algorithms), or
                // the next opening of a calendar.
                if (limit_.calendar.unit != core::CalendarUnit::none) {
                    const core::CalendarIndex window = core::calendar_index(limit_.calendar, now_);
                    move_clock(static_cast<__int128>(core::calendar_start(limit_.calendar, window + 1)) + in.u8() % 5 -
                               2);
                    break;
                }
                const __int128 index = floor_div(static_cast<__int128>(now_) - origin_, limit_.period) + 1;
                move_clock(origin_ + index * limit_.period + in.u8() % 5 - 2);
                break;
            }
            case Op::wait_retry:
                move_clock(static_cast<__int128>(now_) + last_wait_ + in.u8() % 5 - 2);
                break;
            case Op::cleanup:
                cleanup();
                break;
            case Op::reset:
                forget_key();
                break;
        }
        if (g_trace && op_ != Op::request && op_ != Op::reserve && op_ != Op::check && op_ != Op::refund) {
            std::fprintf(stderr, "#%d %s -> now=%" PRId64 " row=%s{%.17g, %" PRId64 "}\n", op_index_, op_name(op_),
                         now_, has_row_ ? "" : "(none) ", row_.value, row_.ts);
        }
        check_row();
        check_calendar();
    }

  private:
    // --- operations ---

    void define(const Limit &limit) {
        limit_ = limit;
        algorithm_ = &algorithm_under_test(limit.algorithm);
        // A grid is anchored at start, or offset per key by its hash; an algorithm without one has origin 0.
        origin_ = core::window_origin(limit, key_hash_);
        Micros expected_origin = 0;
        if (algorithm_->accepts_start) {
            expected_origin = limit.has_start ? limit.start : static_cast<Micros>(key_hash_ % limit.period);
        }
        require(origin_ == expected_origin, "window_origin is start, key hash % period, or 0 without a grid",
                "origin=%" PRId64 " expected=%" PRId64, origin_, expected_origin);
        // A new definition starts new stretches: the bound holds within one definition.
        written_count_ = 0;
        admitted_ = 0;
        refunded_ = 0;
        magnitude_ = limit.capacity;
        // The row kept is read on the new definition's grid: a sliding window row names its window by its
        // ts, so a period or start changed by the redefinition can put it in a window that ends before the
        // key time; with the clock behind, the key is then evaluated at that window's start. Key time moves
        // back to the earliest instant the core may now evaluate the row at (a token bucket converted from
        // GCRA: the instant it was rewritten at).
        if (has_row_ && has_latest_ && algorithm_->full_row_holds_key_time) {
            latest_ =
                std::min(latest_, core::rules_of(limit.algorithm).level(limit, row_, kPgMinTimestamp, origin_).at);
        }
        if (drops_key_time()) latest_ = now_;  // GCRA: see record_write
    }

    // rate_limit_define over the existing limit, with a rescale rule (core/rescale.hpp), as the glue does:
    // the keys start afresh (reset, or an algorithm whose state does not carry over), or keep their state,
    // rewritten by rescaled_state where rescale_rewrites says so (an algorithm conversion, another rate,
    // period, capacity or window grid), else as it is.
    void redefine(Bytes &in) {
        const Limit next = fuzz::limit(in, zones_.spare());
        if (g_trace) print_limit("redefine to", next, 0);
        if (!accepted(next)) return;  // rate_limit_define raises an error: nothing changes
        if (!core::state_carries_over(limit_, next)) {
            forget_key();
        } else {
            constexpr core::Rescale kRules[] = {core::Rescale::proportional, core::Rescale::as_is,
                                                core::Rescale::reset};
            const core::Rescale rule = in.pick(kRules);
            if (rule == core::Rescale::reset) {
                forget_key();
            } else if (has_row_ && core::rescale_rewrites(limit_, next)) {
                rescale(next, rule);
            }
        }
        define(next);
        zones_.adopt();
    }

    // Rewrites the row for `next`: it holds the balance it held under the old definition, scaled
    // by the capacities' ratio under proportional (never above the new capacity); a sliding window the
    // amount it had used, scaled alike (up to one quantum, rounded towards less).
    void rescale(const Limit &next, core::Rescale rule) {
        const Micros next_origin = core::window_origin(next, key_hash_);
        const double factor = rule == core::Rescale::proportional ? next.capacity / limit_.capacity : 1.0;
        // Both read at the instant the old definition evaluates the key at now (a token bucket's own time
        // when the clock is behind it), where the state is rewritten: GCRA, for one, holds less earlier.
        const core::Level level = core::rules_of(limit_.algorithm).level(limit_, row_, now_, origin_);
        const double before = level.value;
        const State rewritten = core::rescaled_state(limit_, next, row_, now_, origin_, next_origin, rule);
        const double after = core::balance_at(next, &rewritten, level.at, next_origin);
        const double expected = limit_.algorithm == Algorithm::sliding_window
                                    ? next.capacity - (limit_.capacity - before) * factor
                                    : std::min(before * factor, next.capacity);
        const double loss = algorithm_under_test(next.algorithm).store_loss(next);
        const double slack =
            core::tolerance(next) +
            static_cast<double>(kRoundingPerOp) *
                std::max({std::fabs(before), std::fabs(expected), next.capacity, limit_.capacity, magnitude_ * factor});
        require(std::isfinite(rewritten.value) && after <= expected + slack && after >= expected - loss - slack,
                "a rescaled key holds its balance scaled (a sliding window: its use), never more",
                "rule=%u before=%.17g after=%.17g expected=%.17g row={%.17g, %" PRId64 "} -> {%.17g, %" PRId64 "}",
                static_cast<unsigned>(rule), before, after, expected, row_.value, row_.ts, rewritten.value,
                rewritten.ts);
        row_ = rewritten;
    }

    // rate_limit_reset, or a redefinition with another algorithm: the key starts afresh.
    void forget_key() {
        has_row_ = false;
        has_latest_ = false;
        written_count_ = 0;
    }

    // rate_limit_cleanup: deletes the row if it is full (equivalent to no row). The key was full at the
    // instant it was judged at, so the bound's key time moves there: a key that later starts afresh at an
    // earlier clock reading is held to what it could have taken since that instant. A sliding window's row
    // names only its window, so it can be judged full at an instant before the latest write in that window:
    // full there, it decided as no row from then on, and the key time moves back to that instant; the
    // stretches then restart, their key times no longer in order.
    void cleanup() {
        const Micros judged = now_ - core::CLEANUP_MARGIN;
        if (!has_row_ || !core::is_full(limit_, row_, judged, origin_)) return;
        clock_floor_ = std::max(clock_floor_, judged);
        if (has_latest_ && latest_ > judged) written_count_ = 0;
        latest_ = judged;
        has_latest_ = true;
        has_row_ = false;
        ++cleanups_;
    }

    void move_clock(__int128 to) {
        if (to < clock_floor_) to = clock_floor_;  // see the top of the file: within the cleanup margin
        cost_ = static_cast<double>(to - now_);
        now_ = clamp_to_pg_range(to);
    }

    // A cost as the SQL functions take it; false (an ERROR in SQL) if validation rejects it.
    bool read_cost(Bytes &in) {
        cost_ = fuzz::cost(in, limit_);
        core::CostProblem expected = core::CostProblem::none;
        if (!valid_units(cost_)) {
            expected = core::CostProblem::not_positive_finite;
        } else if (cost_ > limit_.capacity + core::tolerance(limit_)) {
            expected = core::CostProblem::exceeds_capacity;
        }
        const core::CostProblem problem = core::validate_cost(limit_, cost_);
        require(problem == expected, "validate_cost rejects what it should", "validate_cost=%u expected=%u",
                static_cast<unsigned>(problem), static_cast<unsigned>(expected));
        return problem == core::CostProblem::none;
    }

    // rate_limit_request (write) or rate_limit_check (no write, no reservation).
    void decide(Bytes &in, bool reserve, bool write) {
        reserve_ = reserve;
        if (!read_cost(in)) return;
        const State *stored = has_row_ ? &row_ : nullptr;
        const Outcome out = core::request(limit_, stored, now_, cost_, reserve, origin_);
        trace(out);
        check_common(out, stored);
        const double tol = core::tolerance(limit_);
        if (out.allowed) {
            // It writes unless the row would stay exactly as it is (a cost below the balance's resolution).
            const bool changes = stored == nullptr || out.next.value != stored->value || out.next.ts != stored->ts;
            require(out.write == changes, "an admitted request writes if that changes the row",
                    "write=%d next={%.17g, %" PRId64 "}", out.write, out.next.value, out.next.ts);
            check_stored(out);
            if (reserve) {
                require(-out.balance <= limit_.max_reserved + tol, "a reservation's debt is within max_reserved",
                        "balance=%.17g", out.balance);
            } else {
                require(out.balance >= -tol, "a plain request never leaves debt", "balance=%.17g", out.balance);
            }
            check_debt_wait(out, /*wrote=*/true);
        } else {
            require(!out.write, "a denied request writes nothing", "write=%d", out.write);
            check_denied_wait(out, stored);
            check_jitter(out);
        }
        check_reset_after(out, out.write ? &out.next : stored);
        last_wait_ = out.retry_after;
        if (write && out.allowed) {
            row_ = out.next;
            has_row_ = true;
            record_write(cost_, 0);
        }
    }

    // rate_limit_refund.
    void give_back(Bytes &in) {
        if (!read_cost(in)) return;
        const State *stored = has_row_ ? &row_ : nullptr;
        const Outcome out = core::refund(limit_, stored, now_, cost_, origin_);
        trace(out);
        check_common(out, stored);
        const bool changes = has_row_ && (out.next.value != row_.value || out.next.ts != row_.ts);
        require(out.allowed && out.write == changes, "a refund is allowed and writes only an existing row it changes",
                "allowed=%d write=%d", out.allowed, out.write);
        require(out.balance <= limit_.capacity, "a refund never raises the balance above capacity", "balance=%.17g",
                out.balance);
        if (out.write) check_stored(out);
        check_debt_wait(out, out.write);
        check_reset_after(out, out.write ? &out.next : stored);
        last_wait_ = out.retry_after;
        if (out.write) {
            row_ = out.next;
            record_write(0, cost_);
        }
    }

    // --- invariants ---

    // Where the core evaluates the key now: the token bucket and fixed window at the stored ts if the clock
    // is behind it, the sliding window at the start of its stored window, GCRA at now.
    [[nodiscard]] Micros key_instant() const {
        return has_row_ ? core::rules_of(limit_.algorithm).level(limit_, row_, now_, origin_).at : now_;
    }

    // What a call stores holds the balance it reports, and the key is evaluated at the same instant after
    // the write as before it (algorithms_under_test.hpp: stores_balance, store_loss).
    void check_stored(const Outcome &out) {
        const core::Level back = core::rules_of(limit_.algorithm).level(limit_, out.next, now_, origin_);
        const Micros at = key_instant();
        if (algorithm_->stores_balance) {
            // A calendar key keeps the opening of its window instead (fixed_window.cpp).
            const core::Calendar &calendar = limit_.calendar;
            const Micros stored_at = calendar.unit == core::CalendarUnit::none
                                         ? at
                                         : core::calendar_start(calendar, core::calendar_index(calendar, at));
            require(out.next.value == out.balance && out.next.ts == stored_at,
                    "the row written is {balance, key instant} (a calendar's: the opening of its window)",
                    "next={%.17g, %" PRId64 "} balance=%.17g key instant=%" PRId64, out.next.value, out.next.ts,
                    out.balance, at);
        }
        const double loss = algorithm_->store_loss(limit_);
        const double slack = rounding(out.balance);
        require(back.at == at && back.value <= out.balance + slack && back.value >= out.balance - loss - slack,
                "the row written reads back as the balance reported (never more; the sliding window up to one quantum "
                "less), at the same key instant",
                "next={%.17g, %" PRId64 "} reads back %.17g at %" PRId64 "; balance=%.17g key instant=%" PRId64
                " quantum=%.17g rounding=%.3g",
                out.next.value, out.next.ts, back.value, back.at, out.balance, at, loss, slack);
    }

    // How far an encoded state may read back from the balance written: the tolerance, and a few ulps of the
    // largest figure involved.
    [[nodiscard]] double rounding(double balance) const {
        return core::tolerance(limit_) +
               static_cast<double>(kRoundingPerOp) * std::max({std::fabs(balance), limit_.capacity, magnitude_});
    }

    // A denied call's retry_after spread by the limit's jitter: never shorter, at most jitter longer, and
    // never beyond MAX_DURATION.
    void check_jitter(const Outcome &out) const {
        const std::uint64_t random = static_cast<std::uint64_t>(now_) * 0x9e3779b97f4a7c15ULL ^ op_index_;
        const Micros spread = core::jittered(limit_, out.retry_after, random);
        const Micros most = std::min(out.retry_after + limit_.jitter, core::MAX_DURATION);
        require(spread >= out.retry_after && spread <= most, "a jittered retry_after is within [retry_after, + jitter]",
                "retry_after=%" PRId64 " jitter=%" PRId64 " jittered=%" PRId64, out.retry_after, limit_.jitter, spread);
    }

    void check_common(const Outcome &out, const State *stored) {
        const double tol = core::tolerance(limit_);
        require(std::isfinite(out.balance) && std::isfinite(out.next.value), "values are finite",
                "balance=%.17g next.value=%.17g", out.balance, out.next.value);
        require(out.retry_after >= 0 && out.retry_after <= core::MAX_DURATION && out.reset_after >= 0 &&
                    out.reset_after <= core::MAX_DURATION,
                "retry_after and reset_after within [0, MAX_DURATION]", "retry_after=%" PRId64 " reset_after=%" PRId64,
                out.retry_after, out.reset_after);
        require(out.balance <= limit_.capacity + tol, "the balance never exceeds capacity", "balance=%.17g",
                out.balance);
        const auto whole = static_cast<double>(core::whole_units(limit_, out.balance));
        require(whole >= 0 && whole <= limit_.capacity + 2 * tol, "whole_units within [0, capacity]",
                "whole_units=%.17g balance=%.17g", whole, out.balance);
        magnitude_ = std::max({magnitude_, std::fabs(out.balance), cost_});
        if (stored != nullptr) magnitude_ = std::max(magnitude_, std::fabs(stored->value));
    }

    // A denied request: the same request from the same state succeeds at now + retry_after, and not 1 us
    // earlier.
    void check_denied_wait(const Outcome &out, const State *stored) {
        require(out.retry_after > 0, "a denied request has retry_after > 0", "retry_after=%" PRId64, out.retry_after);
        Micros then = 0;
        if (out.retry_after < core::MAX_DURATION && later(now_, out.retry_after, &then)) {
            const Outcome retried = core::request(limit_, stored, then, cost_, reserve_, origin_);
            require(retried.allowed, "retry_after honoured: the same request succeeds at now + retry_after",
                    "retry_after=%" PRId64 " at %" PRId64 ": balance=%.17g", out.retry_after, then, retried.balance);
        }
        if (later(now_, out.retry_after - 1, &then)) {
            const Outcome early = core::request(limit_, stored, then, cost_, reserve_, origin_);
            require(!early.allowed, "retry_after exact: the same request is still denied 1 us before retry_after",
                    "retry_after=%" PRId64 " at %" PRId64 ": allowed, balance=%.17g", out.retry_after, then,
                    early.balance);
        }
    }

    // An admitted request or a refund: out of debt (balance >= -tolerance), retry_after is 0; in debt, it is
    // when the debt of the state written is repaid, exactly (check_repaid_at). An encoded state (GCRA's TAT,
    // the sliding window's quanta) reads back to float rounding: a balance less than that rounding below
    // -tolerance may read back out of debt, and retry_after is then 0.
    // (Not checked: that this is also when a plain request of the same cost, from the state before, would
    // have succeeded. That is a different sum of the same numbers, (balance + refill) - cost instead of
    // (balance - cost) + refill, and at the tolerance boundary the two round to different answers, by a
    // whole window for a fixed window. What the core promises is about the state it stores.)
    void check_debt_wait(const Outcome &out, bool wrote) {
        const double tol = core::tolerance(limit_);
        if (out.balance >= -tol) {
            require(out.retry_after == 0, "out of debt: retry_after is 0", "balance=%.17g retry_after=%" PRId64,
                    out.balance, out.retry_after);
            return;
        }
        if (!wrote) return;
        const bool within_rounding = !algorithm_->stores_balance && out.balance >= -tol - rounding(out.balance);
        if (!within_rounding) {
            require(out.retry_after > 0, "in debt: retry_after > 0", "balance=%.17g retry_after=%" PRId64, out.balance,
                    out.retry_after);
        }
        check_repaid_at(out.next, out.retry_after);
    }

    // Out of debt: the balance of the state at `at` is at least -tolerance (the comparison every decision
    // makes). (Not a refund of the smallest double, whose retry_after says the same of the state it writes:
    // GCRA writes its balance as a TAT, rounded by a fraction of a microsecond, which can put a key that was
    // just out of debt back in for 1 us.)
    [[nodiscard]] bool out_of_debt(const State &state, Micros at) const {
        return core::balance_at(limit_, &state, at, origin_) >= -core::tolerance(limit_);
    }

    // A key in debt by `state` is out of debt at now + wait, and not 1 us earlier.
    void check_repaid_at(const State &state, Micros wait) {
        Micros then = 0;
        if (wait < core::MAX_DURATION && later(now_, wait, &then)) {
            require(out_of_debt(state, then), "the debt is repaid at now + retry_after",
                    "state={%.17g, %" PRId64 "} retry_after=%" PRId64, state.value, state.ts, wait);
        }
        if (wait > 0 && later(now_, wait - 1, &then)) {
            require(!out_of_debt(state, then), "retry_after exact: still in debt 1 us before retry_after",
                    "state={%.17g, %" PRId64 "} retry_after=%" PRId64, state.value, state.ts, wait);
        }
    }

    // The key (after the call) is full at now + reset_after, and not 1 us earlier.
    void check_reset_after(const Outcome &out, const State *after) {
        if (after == nullptr) {
            require(out.reset_after == 0, "a key without a row is full: reset_after 0", "reset_after=%" PRId64,
                    out.reset_after);
            return;
        }
        check_is_full(*after);
        // Back at full capacity: a request for the whole capacity would be admitted (is_full says the same
        // once the clock is not behind the row).
        const auto at_capacity = [&](Micros t) {
            return core::request(limit_, after, t, limit_.capacity, false, origin_).allowed;
        };
        Micros then = 0;
        if (out.reset_after < core::MAX_DURATION && later(now_, out.reset_after, &then)) {
            require(at_capacity(then), "the key is full at now + reset_after",
                    "after={%.17g, %" PRId64 "} reset_after=%" PRId64, after->value, after->ts, out.reset_after);
        }
        if (out.reset_after > 0 && later(now_, out.reset_after - 1, &then)) {
            require(!at_capacity(then), "reset_after exact: the key is not full 1 us before reset_after",
                    "after={%.17g, %" PRId64 "} reset_after=%" PRId64, after->value, after->ts, out.reset_after);
        }
    }

    // After every operation: the row's numbers are finite and is_full agrees with a check.
    void check_row() {
        if (!has_row_) return;
        require(std::isfinite(row_.value), "the stored value is finite", "value=%.17g", row_.value);
        check_is_full(row_);
    }

    // is_full agrees with a check of a request for the whole capacity, so deleting a full row changes no
    // decision; except that a row stored ahead of the clock (it stepped back) is never full: it holds the
    // key's time (crash-cleanup-while-clock-behind-mints-units).
    void check_is_full(const State &state) {
        const bool full = core::is_full(limit_, state, now_, origin_);
        const Outcome whole = core::request(limit_, &state, now_, limit_.capacity, false, origin_);
        const bool expected = whole.allowed && now_ >= state.ts;
        require(full == expected, "is_full agrees with a check of a request for the whole capacity",
                "state={%.17g, %" PRId64 "} is_full=%d check(capacity).allowed=%d balance=%.17g", state.value, state.ts,
                full, whole.allowed, whole.balance);
    }

    // A calendar limit's window at now (see the top of the file).
    void check_calendar() const {
        const core::Calendar &calendar = limit_.calendar;
        if (calendar.unit == core::CalendarUnit::none) return;
        const core::CalendarIndex window = core::calendar_index(calendar, now_);
        const Micros open = core::calendar_start(calendar, window);
        const Micros close = core::calendar_start(calendar, window + 1);
        constexpr Micros kLast = std::numeric_limits<Micros>::max();  // calendar_start saturates there
        require(open <= now_ && (now_ < close || close == kLast), "now lies in the window calendar_index gives it",
                "window=%" PRId64 " [%" PRId64 ", %" PRId64 ")", static_cast<std::int64_t>(window), open, close);
        // The opening is the zone's reading of local midnight of the window's first day, as long as that
        // midnight fits in int64 with a day to spare (calendar.hpp: further days saturate).
        const __int128 day = first_day(calendar, window);
        constexpr __int128 kLastDay = kLast / kDay - 1;
        if (day >= -kLastDay && day <= kLastDay) {
            const core::TimeZone &zone = *calendar.zone;
            const Micros expected = zone.utc_of_local(zone, static_cast<Micros>(day) * kDay);
            require(open == expected, "a calendar window opens at local midnight of its first day",
                    "window=%" PRId64 " first day=%" PRId64 " opens at %" PRId64 ", expected %" PRId64,
                    static_cast<std::int64_t>(window), static_cast<std::int64_t>(day), open, expected);
        }
        // The microsecond before the opening is in the window before, unless that one has no length (a day
        // the zone skips entirely).
        const Micros previous = core::calendar_start(calendar, window - 1);
        if (previous < open) {
            const core::CalendarIndex before = core::calendar_index(calendar, open - 1);
            require(before == window - 1, "the microsecond before an opening belongs to the window before",
                    "window=%" PRId64 " opens at %" PRId64 "; calendar_index(opening - 1)=%" PRId64,
                    static_cast<std::int64_t>(window), open, static_cast<std::int64_t>(before));
        }
        require(previous <= open && open <= close, "calendar windows never close before they open",
                "windows %" PRId64 "..%" PRId64 " open at %" PRId64 ", %" PRId64 ", %" PRId64,
                static_cast<std::int64_t>(window - 1), static_cast<std::int64_t>(window + 1), previous, open, close);
    }

    // Whether the row, full at key time while the clock is behind it, no longer holds the key's time: a GCRA
    // row whose TAT a refund or a rescale wrote at an earlier clock reading.
    [[nodiscard]] bool drops_key_time() const {
        return has_row_ && has_latest_ && now_ < latest_ && !algorithm_->full_row_holds_key_time &&
               core::balance_at(limit_, &row_, latest_, origin_) >= limit_.capacity - core::tolerance(limit_);
    }

    // A write of the key: the next stretch start, and the bound over every stretch ending here.
    void record_write(double admitted, double refunded) {
        // Key time never goes back (see latest_), whatever the clock does and whether the row survived;
        // except where the row itself drops it: a GCRA row full at the key's time while the clock is behind
        // (a refund wrote a TAT of now) counts from now on, as a key without a row would. The stretches
        // ending later start afresh there (those that include the refund would still hold: the units the
        // key takes back in [TAT, key time] are refunded ones).
        if (drops_key_time()) {
            written_count_ = 0;
            latest_ = now_;
        }
        const Micros at = has_latest_ ? std::max(now_, latest_) : now_;
        written_[written_count_++] = {admitted_, refunded_, at, cleanups_};
        admitted_ += admitted;
        refunded_ += refunded;
        latest_ = at;
        has_latest_ = true;
        if (admitted > 0) check_admission_bound(at);
    }

    // Admitted units over every stretch [a, at] of this definition (net of refunds) are within capacity
    // - the balance left at `at` + the refill over the stretch: the key held at most capacity at a, gained
    // at most the refill, and its row holds that balance at key time `at`.
    void check_admission_bound(Micros at) {
        const long double tol = core::tolerance(limit_);
        const long double magnitude = magnitude_;
        const double left = core::balance_at(limit_, &row_, at, origin_);
        for (int i = 0; i < written_count_; ++i) {
            const Written &from = written_[i];
            const long double admitted = admitted_ - from.admitted_before;
            const long double refunded = refunded_ - from.refunded_before;
            const long double refill = algorithm_->refill_bound(limit_, origin_, from.at, at);
            const long double bound = limit_.capacity - static_cast<long double>(left) + refill + refunded;
            // Rounding: the admission tolerance (once: a shortfall it forgives is kept as debt), the
            // tolerance of each full row deleted, and a few ulps per operation and of the refill.
            const long double slack = 2 * tol + (cleanups_ - from.cleanups_before) * tol +
                                      (written_count_ - i + 2) * (kRoundingPerOp * magnitude + kDenormalRoundingPerOp) +
                                      kRoundingPerOp * refill;
            if (admitted > bound + slack) {
                fail("admission bound: units admitted in a stretch within capacity + refill + refunds - balance left",
                     "stretch [%" PRId64 ", %" PRId64
                     "] (writes %d..%d): admitted=%.17Lg refunded=%.17Lg refill=%.17Lg"
                     " balance left=%.17g bound=%.17Lg excess=%.6Lg slack=%.6Lg",
                     from.at, at, i, written_count_ - 1, admitted, refunded, refill, left, bound, admitted - bound,
                     slack);
            }
        }
    }

    // --- reporting ---

    void trace(const Outcome &out) const {
        if (!g_trace) return;
        std::fprintf(stderr,
                     "#%d %s cost=%.17g now=%" PRId64 " row=%s{%.17g, %" PRId64
                     "} -> allowed=%d balance=%.17g"
                     " retry_after=%" PRId64 " reset_after=%" PRId64 "\n",
                     op_index_, op_name(op_), cost_, now_, has_row_ ? "" : "(none) ", row_.value, row_.ts, out.allowed,
                     out.balance, out.retry_after, out.reset_after);
    }

    __attribute__((format(printf, 4, 5))) void require(bool ok, const char *invariant, const char *format, ...) const {
        if (ok) return;
        va_list args;
        va_start(args, format);
        vfail(invariant, format, args);
    }

    [[noreturn]] __attribute__((format(printf, 3, 4))) void fail(const char *invariant, const char *format, ...) const {
        va_list args;
        va_start(args, format);
        vfail(invariant, format, args);
    }

    [[noreturn]] void vfail(const char *invariant, const char *format, va_list args) const {
        std::fprintf(stderr, "\ncore fuzzer: INVARIANT VIOLATED: %s\n", invariant);
        std::fprintf(stderr, "  operation #%d: %s %s=%.17g reserve=%d\n", op_index_, op_name(op_),
                     op_ == Op::advance || op_ == Op::step_back || op_ == Op::to_boundary || op_ == Op::wait_retry
                         ? "clock move"
                         : "cost",
                     cost_, reserve_);
        print_limit("limit", limit_, origin_);
        std::fprintf(stderr, "  now=%" PRId64 " row=%s{%.17g, %" PRId64 "}\n  ", now_, has_row_ ? "" : "(none) ",
                     row_.value, row_.ts);
        std::vfprintf(stderr, format, args);
        std::fprintf(stderr, "\n  replay with PG_RATELIMIT_FUZZ_TRACE=1 to print every operation\n");
        std::abort();
    }

    // Ordered by alignment (clang-analyzer's padding check).
    long double admitted_ = 0;  // running totals within the definition
    long double refunded_ = 0;
    std::array<Written, kMaxOps> written_{};
    Limit limit_{};
    ZoneSlots &zones_;
    const AlgorithmUnderTest *algorithm_ = nullptr;
    State row_{};
    Micros origin_ = 0;
    std::uint64_t key_hash_;
    Micros now_;
    Micros latest_ = 0;  // the key time: the latest instant written at or judged full at by cleanup
    Micros clock_floor_ = std::numeric_limits<Micros>::min();  // the latest instant cleanup judged a row at
    Micros last_wait_ = 0;  // the last retry_after reported (wait_retry moves the clock by it)
    double magnitude_ = 0;  // largest capacity, balance or cost seen: the scale of rounding
    double cost_ = 0;       // the current operation's cost (or clock move), for reports
    int written_count_ = 0;
    int cleanups_ = 0;
    int op_index_ = 0;  // the current operation, for reports
    Op op_ = Op::request;
    bool has_row_ = false;
    bool has_latest_ = false;
    bool reserve_ = false;
};

}  // namespace
}  // namespace pg_ratelimit::fuzz

extern "C" int LLVMFuzzerInitialize(int * /*argc*/, char *** /*argv*/) {
    const char *trace = std::getenv("PG_RATELIMIT_FUZZ_TRACE");
    pg_ratelimit::fuzz::g_trace = trace != nullptr && *trace != '\0' && std::strcmp(trace, "0") != 0;
    return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t *data, std::size_t size) {
    using namespace pg_ratelimit::fuzz;
    Bytes in(data, size);
    ZoneSlots zones;
    const Limit limit = pg_ratelimit::fuzz::limit(in, zones.spare());
    const std::uint64_t key_hash = in.bits(8);
    const Micros now = first_instant(in);
    if (g_trace) print_limit("define", limit, 0);
    if (!accepted(limit)) return 0;  // rate_limit_define raises an error
    zones.adopt();
    Run run(limit, zones, key_hash, now);
    for (int op = 0; op < kMaxOps && !in.empty(); ++op) run.step(in);
    return 0;
}
