// The batch systems: one call is one rate_limit_request_many of Params::batch keys, in autocommit (one
// transaction per batch), on the limit of one storage mode.
#include <cstdint>
#include <memory>
#include <optional>
#include <pqxx/pqxx>
#include <stdexcept>
#include <string>
#include <vector>

#include "pqxx_compat.hpp"
#include "systems.hpp"

namespace bench {

// What an application batching its keys needs back: how many decisions came (checked against the batch
// size) and which positions were refused (NULL when none), in one row, so that the client reads one small
// row rather than a thousand, and the server's work per decision is what the figure shows.
const char *const MANY_SQL =
    "SELECT count(*), array_agg(position) FILTER (WHERE NOT allowed)"
    " FROM rate_limit_request_many($1::text[], $2)";

namespace {

// xorshift64*, as the runner's: a few instructions per key.
std::uint64_t next_random(std::uint64_t &state) {
    state ^= state >> 12;
    state ^= state << 25;
    state ^= state >> 27;
    return state * 0x2545F4914F6CDD1Dull;
}

class ManyWorker : public Worker {
  public:
    ManyWorker(const Params &p, const std::string &system_id, const std::string &limit,
               const std::vector<std::string> &keys, std::uint64_t seed)
        : conn_(p.conninfo), limit_(limit), keys_(keys), batch_(p.batch), state_(seed) {
        start_session(conn_, system_id, nullptr);
        conn_.prepare("q", MANY_SQL);
        tx_.emplace(conn_);
    }
    void call(const std::string &, Counters &counters) override {
        // The array's text form: the harness's keys ("k" and digits) need no quoting. Keys are drawn with
        // replacement, so a batch may hold a key twice, as an application's might.
        literal_.assign(1, '{');
        for (int i = 0; i < batch_; ++i) {
            if (i > 0) literal_ += ',';
            literal_ += keys_[next_random(state_) % keys_.size()];
        }
        literal_ += '}';
        const pqxx::result r = pg_ratelimit::compat::exec_prepared(*tx_, "q", literal_, limit_);
        if (r.size() != 1 || r[0][0].as<long>() != batch_)
            throw std::runtime_error("rate_limit_request_many returned " +
                                     (r.empty() ? "no" : r[0][0].as<std::string>()) + " rows for " +
                                     std::to_string(batch_) + " keys");
        if (!r[0][1].is_null()) ++counters.denied;  // a call with at least one refused key
    }
    void recover() override {
        tx_.reset();
        tx_.emplace(conn_);
    }

  private:
    pqxx::connection conn_;
    std::optional<pqxx::nontransaction> tx_;
    std::string limit_;
    const std::vector<std::string> &keys_;
    int batch_;
    std::uint64_t state_;
    std::string literal_;
};

class ManySystem : public System {
  public:
    ManySystem(const Params &p, const std::string &storage, const std::vector<std::string> &keys)
        : System("many_" + storage,
                 "rate_limit_request_many (" + storage + "): " + std::to_string(p.batch) + " keys per call"),
          params_(p),
          limit_(storage_limit(p, storage)),
          keys_(keys) {}
    std::unique_ptr<Worker> connect() override {
        // A different stream of keys for every worker the system opens.
        return std::make_unique<ManyWorker>(params_, id(), limit_, keys_, 0x9E3779B97F4A7C15ull * ++opened_);
    }
    int decisions_per_call() const override { return params_.batch; }

  private:
    Params params_;
    std::string limit_;
    const std::vector<std::string> &keys_;
    std::uint64_t opened_ = 0;
};

}  // namespace

std::unique_ptr<System> make_ext_many(const Params &p, const std::string &storage,
                                      const std::vector<std::string> &keys) {
    if (p.batch < 1) throw std::invalid_argument("the batch size must be at least 1");
    return std::make_unique<ManySystem>(p, storage, keys);
}

}  // namespace bench
