#include "limiter/decider.hpp"

#include <algorithm>
#include <boost/asio/steady_timer.hpp>
#include <tuple>

#include "limiter/binary.hpp"
#include "limiter/statements.hpp"

namespace gate::limiter {

namespace asio = boost::asio;
using Clock = std::chrono::steady_clock;

enum class CallKind { request_one, request_all, reserve_all, refund_all };

struct Decider::Attempt {
    CallKind kind = CallKind::request_all;
    std::vector<std::size_t> order;  // reserve_all: the position given of each triple sent
    std::vector<Triple> triples;
    std::vector<std::chrono::microseconds> max_waits;
    std::vector<std::string> params;
    Clock::time_point deadline;
    int attempts = 0;
    bool memory = false;  // a triple on a memory limit: never run again once sent
    bool solo = false;    // its batch failed with an error that may be its own: alone from now on
    Done done;
};

Decider::Decider(asio::io_context &io, Pool &pool, DeciderSettings settings)
    : io_(io), pool_(pool), batcher_(io, pool), settings_(settings), random_(std::random_device{}()) {}

namespace {

std::vector<std::string> keys_and_limits(const std::vector<Triple> &triples) {
    std::vector<std::string> keys;
    std::vector<std::string> limits;
    for (const auto &t : triples) {
        keys.push_back(t.key);
        limits.push_back(t.limit);
    }
    return {encode_text_array(keys), encode_text_array(limits)};
}

}  // namespace

void Decider::request_all(std::vector<Triple> triples, Done done) {
    auto attempt = std::make_shared<Attempt>();
    attempt->kind = triples.size() == 1 ? CallKind::request_one : CallKind::request_all;
    attempt->memory = std::any_of(triples.begin(), triples.end(), [](const Triple &t) { return t.memory; });
    attempt->triples = std::move(triples);
    attempt->deadline = Clock::now() + settings_.timeout;
    attempt->done = std::move(done);
    run(attempt);
}

void Decider::reserve_all(std::vector<Triple> given, std::vector<std::chrono::microseconds> given_waits, Done done) {
    auto attempt = std::make_shared<Attempt>();
    attempt->kind = CallKind::reserve_all;
    // rate_limit_request_all's order: table limits first, by limit then key (concurrent callers lock rows in
    // one order and never deadlock on each other), memory limits last (the fewest refunds if a table limit
    // refuses).
    std::vector<std::size_t> order(given.size());
    for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
        return std::tie(given[a].memory, given[a].limit, given[a].key) <
               std::tie(given[b].memory, given[b].limit, given[b].key);
    });
    std::vector<Triple> triples;
    std::vector<std::chrono::microseconds> max_waits;
    for (const std::size_t i : order) {
        triples.push_back(given[i]);
        max_waits.push_back(given_waits[i]);
    }
    attempt->order = std::move(order);
    attempt->params = keys_and_limits(triples);
    attempt->params.push_back(encode_interval_array(max_waits));
    attempt->memory = std::any_of(triples.begin(), triples.end(), [](const Triple &t) { return t.memory; });
    attempt->triples = std::move(triples);
    attempt->max_waits = std::move(max_waits);
    attempt->deadline = Clock::now() + settings_.timeout;
    attempt->done = std::move(done);
    run(attempt);
}

void Decider::refund_all(std::vector<Triple> triples, Done done) {
    auto attempt = std::make_shared<Attempt>();
    attempt->kind = CallKind::refund_all;
    attempt->params = keys_and_limits(triples);
    attempt->memory = std::any_of(triples.begin(), triples.end(), [](const Triple &t) { return t.memory; });
    attempt->triples = std::move(triples);
    attempt->deadline = Clock::now() + settings_.timeout;
    attempt->done = std::move(done);
    run(attempt);
}

void Decider::run(const std::shared_ptr<Attempt> &attempt) {
    ++attempt->attempts;
    if (attempt->kind == CallKind::request_one || attempt->kind == CallKind::request_all) {
        BatchItem item;
        item.triples = attempt->triples;
        item.solo = attempt->solo;
        item.deadline = attempt->deadline;
        item.done = [this, attempt](BatchResult result) { finish(attempt, std::move(result)); };
        batcher_.submit(std::move(item));
        return;
    }
    auto call = std::make_unique<DbCall>();
    call->kind = DbCall::Kind::prepared;
    call->statement = attempt->kind == CallKind::reserve_all ? RESERVE_ALL : REFUND_ALL;
    call->params = attempt->params;
    call->deadline = attempt->deadline;
    call->done = [this, attempt](DbOutcome outcome) {
        BatchResult result{outcome.failure, outcome.sqlstate, outcome.message, {}, false};
        if (outcome.failure == DbFailure::none && attempt->kind == CallKind::reserve_all &&
            !read_reserve_all(outcome.result.get(), attempt->triples.size(), result.rows)) {
            result.failure = DbFailure::sql_error;
            result.sqlstate = "XX000";
            result.message = "unexpected result shape";
        }
        finish(attempt, std::move(result));
    };
    pool_.submit(std::move(call));
}

void Decider::finish(const std::shared_ptr<Attempt> &attempt, BatchResult outcome) {
    CallOutcome out = std::move(outcome.rows);
    out.attempts = attempt->attempts;
    if (outcome.run_alone) attempt->solo = true;
    const bool time_left = Clock::now() < attempt->deadline;
    const bool may_retry = time_left && attempt->attempts < settings_.max_attempts;
    switch (outcome.failure) {
        case DbFailure::none:
            out.status = CallStatus::decided;
            if (!attempt->order.empty()) {
                std::vector<TripleDecision> given(out.each.size());
                for (std::size_t sent = 0; sent < attempt->order.size(); ++sent)
                    given[attempt->order[sent]] = out.each[sent];
                out.each = std::move(given);
            }
            break;
        case DbFailure::sql_error:
            if ((outcome.sqlstate == "40001" || outcome.sqlstate == "40P01") && may_retry) {
                // Full jitter: callers that conflicted together do not retry together.
                const auto ceiling =
                    std::min<std::int64_t>(settings_.backoff_max.count(), settings_.backoff_min.count()
                                                                              << std::min(attempt->attempts - 1, 10));
                std::uniform_int_distribution<std::int64_t> pick(0, ceiling);
                auto timer = std::make_shared<asio::steady_timer>(io_, std::chrono::microseconds(pick(random_)));
                timer->async_wait([this, attempt, timer](boost::system::error_code) { run(attempt); });
                return;
            }
            out.status = CallStatus::error;
            out.sqlstate = outcome.sqlstate;
            out.error = outcome.sqlstate + ": " + outcome.message;
            break;
        case DbFailure::not_sent:
            // Nothing reached the server: safe to send again, whatever the storage.
            if (may_retry && pool_.any_ready()) {
                run(attempt);
                return;
            }
            out.status = CallStatus::unavailable;
            out.error = outcome.message;
            break;
        case DbFailure::lost_after_send:
            // A table limit's call that lost its connection never committed; a memory limit's may have
            // counted already.
            if (!attempt->memory && may_retry && pool_.any_ready()) {
                run(attempt);
                return;
            }
            out.status = CallStatus::unavailable;
            out.error = (attempt->memory ? "in doubt (memory limit, not repeated): " : "") + outcome.message;
            break;
        case DbFailure::timed_out:
            out.status = CallStatus::unavailable;
            out.error = outcome.message;
            break;
    }
    attempt->done(std::move(out));
}

}  // namespace gate::limiter
