#include "limiter/batcher.hpp"

#include <boost/asio/post.hpp>
#include <memory>

#include "limiter/binary.hpp"
#include "limiter/statements.hpp"

namespace gate::limiter {

namespace asio = boost::asio;
using Clock = std::chrono::steady_clock;

namespace {

bool any_memory(const BatchItem &item) {
    for (const auto &t : item.triples) {
        if (t.memory) return true;
    }
    return false;
}

}  // namespace

void Batcher::submit(BatchItem item) {
    pending_.push_back(std::move(item));
    // A free connection and nobody else waiting: send now (light load, nothing to batch with). Otherwise
    // wait until the end of this turn of the event loop, or for a statement to complete.
    if (pending_.size() == 1 && in_flight_ < std::max<std::size_t>(1, pool_.ready_count())) {
        flush();
        return;
    }
    schedule_flush();
}

void Batcher::schedule_flush() {
    // After the handlers already queued on this thread (the other sockets that one epoll_wait found ready):
    // their requests join the same batch.
    if (flush_posted_) return;
    flush_posted_ = true;
    asio::post(io_, [this] {
        flush_posted_ = false;
        flush();
    });
}

void Batcher::flush() {
    const std::size_t slots = std::max<std::size_t>(1, pool_.ready_count());
    while (!pending_.empty() && in_flight_ < slots) {
        // A batch of one shape (one triple each, or several); a solo item goes alone. The others wait, in
        // order, for the next batch.
        std::vector<BatchItem> batch;
        const bool multi = pending_.front().triples.size() > 1;
        const bool solo = pending_.front().solo;
        for (auto it = pending_.begin();
             it != pending_.end() && batch.size() < MAX_BATCH && !(solo && !batch.empty());) {
            if (batch.empty() || (!it->solo && (it->triples.size() > 1) == multi)) {
                batch.push_back(std::move(*it));
                it = pending_.erase(it);
            } else {
                ++it;
            }
        }
        send(std::move(batch));
    }
}

void Batcher::send(std::vector<BatchItem> batch) {
    ++in_flight_;
    ++statements_;
    const bool multi = batch.front().triples.size() > 1;
    auto call = std::make_unique<DbCall>();
    call->kind = DbCall::Kind::prepared;
    call->deadline = Clock::time_point::max();
    std::vector<std::string> keys;
    std::vector<std::string> limits;
    std::vector<std::int32_t> numbers;
    for (std::size_t i = 0; i < batch.size(); ++i) {
        call->deadline = std::min(call->deadline, batch[i].deadline);
        for (const auto &t : batch[i].triples) {
            keys.push_back(t.key);
            limits.push_back(t.limit);
            numbers.push_back(static_cast<std::int32_t>(i + 1));
        }
    }
    if (batch.size() == 1) {
        // Alone: the plain statements, a little cheaper than their batch forms.
        call->statement = multi ? REQUEST_ALL : REQUEST_ONE;
        call->params = multi ? std::vector<std::string>{encode_text_array(keys), encode_text_array(limits)}
                             : std::vector<std::string>{keys[0], limits[0]};
    } else if (multi) {
        call->statement = BATCH_ALL;
        call->params = {encode_int4_array(numbers), encode_text_array(keys), encode_text_array(limits)};
    } else {
        call->statement = BATCH_ONE;
        call->params = {encode_text_array(keys), encode_text_array(limits)};
    }
    auto shared = std::make_shared<std::vector<BatchItem>>(std::move(batch));
    call->done = [this, shared, multi](DbOutcome outcome) {
        --in_flight_;
        complete(*shared, multi, std::move(outcome));
        flush();  // a connection is free: whatever waited goes now
    };
    pool_.submit(std::move(call));
}

void Batcher::complete(std::vector<BatchItem> &batch, bool multi, DbOutcome outcome) {
    if (outcome.failure == DbFailure::none) {
        std::vector<CallOutcome> rows;
        bool read = false;
        if (batch.size() == 1) {
            rows.resize(1);
            read = multi ? read_request_all(outcome.result.get(), batch[0].triples.size(), rows[0])
                         : read_request_one(outcome.result.get(), rows[0]);
        } else if (multi) {
            std::vector<std::size_t> triples;
            triples.reserve(batch.size());
            for (const auto &item : batch) triples.push_back(item.triples.size());
            read = read_batch_all(outcome.result.get(), triples, rows);
        } else {
            read = read_batch_one(outcome.result.get(), batch.size(), rows);
        }
        if (!read) {
            for (auto &item : batch) item.done(BatchResult{DbFailure::sql_error, "XX000", "unexpected result shape"});
            return;
        }
        decided_ += batch.size();
        for (std::size_t i = 0; i < batch.size(); ++i) {
            BatchResult result;
            result.rows = std::move(rows[i]);
            batch[i].done(std::move(result));
        }
        return;
    }
    const bool retryable = outcome.sqlstate == "40001" || outcome.sqlstate == "40P01";
    for (auto &item : batch) {
        if (outcome.failure == DbFailure::sql_error && !retryable && batch.size() > 1) {
            // Another request's error, perhaps: a table-only request committed nothing and runs again alone; a
            // memory limit's decision may have taken effect before the error.
            const bool memory = any_memory(item);
            item.done(BatchResult{memory ? DbFailure::lost_after_send : DbFailure::not_sent,
                                  outcome.sqlstate,
                                  "in a batch that failed: " + outcome.message,
                                  {},
                                  !memory});
            continue;
        }
        item.done(BatchResult{outcome.failure, outcome.sqlstate, outcome.message, {}, false});
    }
}

}  // namespace gate::limiter
