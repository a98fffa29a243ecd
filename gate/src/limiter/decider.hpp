// The gate's three calls on the database, with their retry rules:
// - request_all: every limit of a request in one rate_limit_request_all, all or nothing;
// - reserve_all: the throttle's reservations (rate_limit_reserve of each, bounded by its max_throttle), given
//   back with refund_all when one is refused, so that a refused throttle holds nothing anywhere;
// - refund_all: gives reservations back (a throttled client that went away).
// Retried: 40001 (a limit redefined while the call ran: its commit fails) and 40P01, with jittered
// exponential backoff, a few times within the call's deadline; a statement that never reached the server.
// A call whose connection broke once its statement was sent is run again only when every limit it names keeps
// its state in a table (its transaction then never committed); a memory limit's decision takes effect when
// the statement runs, so such a call is in doubt and is answered unavailable (failure_mode), never repeated.
#pragma once

#include <boost/asio/io_context.hpp>
#include <chrono>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "limiter/batcher.hpp"
#include "limiter/decision.hpp"
#include "limiter/pool.hpp"

namespace gate::limiter {

struct DeciderSettings {
    std::chrono::microseconds timeout{1'000'000};  // for the whole call, retries included
    int max_attempts = 5;
    std::chrono::microseconds backoff_min{1000};
    std::chrono::microseconds backoff_max{50'000};
};

class Decider {
  public:
    using Done = std::function<void(CallOutcome)>;

    Decider(boost::asio::io_context &io, Pool &pool, DeciderSettings settings);
    [[nodiscard]] const Batcher &batcher() const { return batcher_; }

    void request_all(std::vector<Triple> triples, Done done);
    // max_waits[i]: how long triples[i]'s reservation may make the request wait (its limit's max_throttle).
    void reserve_all(std::vector<Triple> triples, std::vector<std::chrono::microseconds> max_waits, Done done);
    void refund_all(std::vector<Triple> triples, Done done);

  private:
    struct Attempt;
    void run(const std::shared_ptr<Attempt> &attempt);
    void finish(const std::shared_ptr<Attempt> &attempt, BatchResult result);

    boost::asio::io_context &io_;
    Pool &pool_;
    Batcher batcher_;
    DeciderSettings settings_;
    std::minstd_rand random_;
};

}  // namespace gate::limiter
