#include "systems.hpp"

#include <functional>
#include <optional>
#include <pqxx/pqxx>
#include <stdexcept>
#include <thread>
#include <utility>

#include "pqxx_compat.hpp"

#ifdef BENCH_HAVE_CLIENT
#include <pg_ratelimit/client.hpp>
#endif
#ifdef BENCH_HAVE_HIREDIS
#include <hiredis.h>
#endif

namespace bench {

namespace compat = pg_ratelimit::compat;

// Starts a new connection's session, before any transaction object holds it: names it after its system
// ("bench:ID" in pg_stat_activity.application_name and in the server log's %a, which is how
// bench/serializable_conflicts.sh attributes predicate locks and errors), then runs the system's session
// setting (e.g. SQL_PATH_SETTING; nullptr: none). Session-level settings stay for the connection's life.
void start_session(pqxx::connection &conn, const std::string &system_id, const char *setting) {
    pqxx::nontransaction tx(conn);
    compat::exec0(tx, "SET application_name = " + tx.quote("bench:" + system_id));
    if (setting != nullptr) compat::exec0(tx, setting);
}

namespace {

// --- the statements --------------------------------------------------------------------------------

constexpr const char *SELECT1_SQL = "SELECT 1";
// The floor for a durable per-key write: one indexed row, one column changed.
constexpr const char *UPDATE_SQL = "UPDATE bench_update SET n = n + 1 WHERE id = $1";
// The seed's token bucket as one statement, with the seed's exact arithmetic: refill by the time
// elapsed since ts, cap at window * refill, take 1, floor at -1 (a negative result means denied).
constexpr const char *UPSERT_SQL =
    "INSERT INTO bench_bucket AS b (id, tk, ts)"
    " VALUES ($1, $3::integer * $2::integer - 1, clock_timestamp())"
    " ON CONFLICT (id) DO UPDATE"
    " SET ts = now(),"
    " tk = greatest(least(b.tk - 1 + $2::integer * extract(epoch FROM clock_timestamp() - b.ts),"
    " $3::integer * $2::integer), -1)"
    " RETURNING tk";
// The seed's PL/pgSQL function, called as published (bench/sql/seed_token_bucket.sql).
constexpr const char *SEED_SQL = "SELECT rate_limiting_token_bucket_request($1, $2, $3)";
// The extension; SELECT * is what an application reads (allowed, remaining, retry_after, reset_after).
constexpr const char *EXT_SQL = "SELECT * FROM rate_limit_request($1, $2)";
// The same call as a scalar: the decision comes back as one record column, and the executor needs no
// FunctionScan (which materialises the function's result in a tuplestore).
constexpr const char *EXT_RECORD_SQL = "SELECT rate_limit_request($1, $2)";

// --- autocommit PostgreSQL systems -------------------------------------------------------------------

using Exec = std::function<pqxx::result(pqxx::transaction_base &, const std::string &key)>;
using Admitted = std::function<bool(const pqxx::result &)>;

// One connection with the statement prepared; a nontransaction sends each statement as it is, so every
// call is its own (autocommitted) transaction and costs exactly one round trip.
class PgWorker : public Worker {
  public:
    PgWorker(const std::string &conninfo, const std::string &system_id, const char *session, const char *sql,
             const Exec &exec, const Admitted &admitted)
        : conn_(conninfo), exec_(exec), admitted_(admitted) {
        start_session(conn_, system_id, session);
        conn_.prepare("q", sql);
        tx_.emplace(conn_);
    }
    void call(const std::string &key, Counters &counters) override {
        const pqxx::result r = exec_(*tx_, key);
        if (admitted_ && !admitted_(r)) ++counters.denied;
    }
    void recover() override {
        tx_.reset();
        tx_.emplace(conn_);
    }

  private:
    pqxx::connection conn_;
    std::optional<pqxx::nontransaction> tx_;
    const Exec &exec_;
    const Admitted &admitted_;
};

class PgSystem : public System {
  public:
    PgSystem(std::string id, std::string label, std::string conninfo, const char *sql, Exec exec, Admitted admitted,
             const char *session = nullptr)
        : System(std::move(id), std::move(label)),
          conninfo_(std::move(conninfo)),
          session_(session),
          sql_(sql),
          exec_(std::move(exec)),
          admitted_(std::move(admitted)) {}
    std::unique_ptr<Worker> connect() override {
        return std::make_unique<PgWorker>(conninfo_, id(), session_, sql_, exec_, admitted_);
    }

  private:
    std::string conninfo_;
    const char *session_;
    const char *sql_;
    Exec exec_;
    Admitted admitted_;
};

bool first_is_true(const pqxx::result &r) { return r.size() == 1 && r[0][0].c_str()[0] == 't'; }
bool first_non_negative(const pqxx::result &r) { return r.size() == 1 && r[0][0].as<long long>() >= 0; }

// --- SERIALIZABLE through the client library's retry helper ------------------------------------------

#ifdef BENCH_HAVE_CLIENT
namespace client = pg_ratelimit;
using RetryEventT = client::RetryEvent;
using RetryPolicyT = client::RetryPolicy;
bool is_serialization(const RetryEventT &e) { return e.reason == client::RetryReason::serialization_failure; }
bool is_deadlock(const RetryEventT &e) { return e.reason == client::RetryReason::deadlock; }
template <typename F>
bool run_serializable(pqxx::connection &conn, F &&fn, const RetryPolicyT &policy) {
    return client::run_transaction(conn, client::isolation::serializable, std::forward<F>(fn), policy);
}
#else
// LOCAL STAND-IN, compiled only when the client library (client/) is not part of the build: the same
// contract as pg_ratelimit::run_transaction (whole transaction retried on 40001/40P01 with full-jitter
// exponential back-off), so that the scenario still runs. Results say which one was used.
struct RetryEventT {
    bool serialization;
};
struct RetryPolicyT {  // the client library's defaults
    int max_attempts = 100;
    std::chrono::milliseconds max_elapsed{10000};
    std::chrono::microseconds base_delay{1000};
    std::chrono::microseconds max_delay{100000};
    std::function<void(const RetryEventT &)> on_retry;
};
bool is_serialization(const RetryEventT &e) { return e.serialization; }
bool is_deadlock(const RetryEventT &e) { return !e.serialization; }
template <typename F>
bool run_serializable(pqxx::connection &conn, F &&fn, const RetryPolicyT &policy) {
    const Clock::time_point start = Clock::now();
    std::uint64_t rng = reinterpret_cast<std::uintptr_t>(&conn) ^ start.time_since_epoch().count();
    for (int attempt = 1;; ++attempt) {
        bool serialization = true;
        try {
            pqxx::work tx{conn};
            compat::exec0(tx, "SET TRANSACTION ISOLATION LEVEL SERIALIZABLE");
            const bool result = fn(tx);
            tx.commit();
            return result;
        } catch (const pqxx::serialization_failure &) {
            if (attempt >= policy.max_attempts) throw;
        } catch (const pqxx::deadlock_detected &) {
            if (attempt >= policy.max_attempts) throw;
            serialization = false;
        }
        auto ceiling = policy.base_delay * (1 << std::min(attempt - 1, 20));
        if (ceiling > policy.max_delay) ceiling = policy.max_delay;
        rng = rng * 6364136223846793005ull + 1442695040888963407ull;
        const auto delay = std::chrono::microseconds((rng >> 33) % (ceiling.count() + 1));
        if (Clock::now() - start + delay > policy.max_elapsed) throw pqxx::serialization_failure("retries exhausted");
        if (policy.on_retry) policy.on_retry(RetryEventT{serialization});
        std::this_thread::sleep_for(delay);
    }
}
#endif

RetryPolicyT make_policy(const Params &p) {
    RetryPolicyT policy;
    if (p.retry_max_attempts > 0) policy.max_attempts = p.retry_max_attempts;
    if (p.retry_max_elapsed_ms > 0) policy.max_elapsed = std::chrono::milliseconds(p.retry_max_elapsed_ms);
    return policy;
}

using TxBody = std::function<bool(pqxx::work &, const std::string &key)>;  // returns admitted

class SerializableWorker : public Worker {
  public:
    SerializableWorker(const std::string &conninfo, const std::string &system_id, const char *session,
                       const char *prepare_sql, const TxBody &body, RetryPolicyT policy)
        : conn_(conninfo), body_(body), policy_(std::move(policy)) {
        start_session(conn_, system_id, session);
        if (prepare_sql != nullptr) conn_.prepare("q", prepare_sql);
        // Counts every retry the helper makes, attributed to the call in progress.
        policy_.on_retry = [this](const RetryEventT &event) {
            ++retries_in_call_;
            ++current_->retries;
            if (is_serialization(event)) ++current_->serialization_failures;
            if (is_deadlock(event)) ++current_->deadlocks;
        };
    }
    void call(const std::string &key, Counters &counters) override {
        current_ = &counters;
        retries_in_call_ = 0;
        try {
            const bool admitted = run_serializable(
                conn_, [this, &key](pqxx::work &tx) { return body_(tx, key); }, policy_);
            if (!admitted) ++counters.denied;
        } catch (const pqxx::serialization_failure &) {
            // The helper gave up: the last 40001 was not followed by a retry, so count it here.
            ++counters.serialization_failures;
            ++counters.exhausted;
            finish(counters);
            throw;
        } catch (const pqxx::deadlock_detected &) {
            ++counters.deadlocks;
            ++counters.exhausted;
            finish(counters);
            throw;
        }
        finish(counters);
    }

  private:
    void finish(Counters &counters) const {
        if (retries_in_call_ > 0) ++counters.retried_calls;
    }
    pqxx::connection conn_;
    const TxBody &body_;
    RetryPolicyT policy_;
    Counters *current_ = nullptr;
    std::uint64_t retries_in_call_ = 0;
};

class SerializableSystem : public System {
  public:
    SerializableSystem(std::string id, std::string label, const Params &p, const char *prepare_sql, TxBody body,
                       const char *session = nullptr)
        : System(std::move(id), std::move(label)),
          conninfo_(p.conninfo),
          session_(session),
          prepare_sql_(prepare_sql),
          body_(std::move(body)),
          policy_(make_policy(p)) {}
    std::unique_ptr<Worker> connect() override {
        return std::make_unique<SerializableWorker>(conninfo_, id(), session_, prepare_sql_, body_, policy_);
    }

  private:
    std::string conninfo_;
    const char *session_;
    const char *prepare_sql_;
    TxBody body_;
    RetryPolicyT policy_;
};

#ifdef BENCH_HAVE_CLIENT
// The in-transaction call goes through the Limiter (thread-safe; those calls use the caller's
// transaction and connection, not the Limiter's pool, which stays at one idle connection).
// `session`: the setting each worker's connection runs first (the access path), nullptr for none.
std::unique_ptr<System> ext_serializable(std::string id, std::string label, const Params &p,
                                         const char *session = nullptr) {
    client::Options options;
    options.pool_size = 1;
    auto limiter = std::make_shared<client::Limiter>(p.conninfo, options);
    return std::make_unique<SerializableSystem>(
        std::move(id), std::move(label), p, nullptr,
        [limiter, limit = p.limit](pqxx::work &tx, const std::string &key) {
            return limiter->request(tx, key, limit).allowed;
        },
        session);
}
#else
std::unique_ptr<System> ext_serializable(std::string id, std::string label, const Params &p,
                                         const char *session = nullptr) {
    return std::make_unique<SerializableSystem>(
        std::move(id), std::move(label) + " [LOCAL retry loop]", p, EXT_SQL,
        [limit = p.limit](pqxx::work &tx, const std::string &key) {
            return first_is_true(compat::exec_prepared(tx, "q", key, limit));
        },
        session);
}
#endif

#ifdef BENCH_HAVE_HIREDIS
// --- Redis ----------------------------------------------------------------------------------------------

redisContext *redis_connect(const std::string &address) {
    redisContext *ctx = nullptr;
    if (address.find('/') != std::string::npos) {
        ctx = redisConnectUnix(address.c_str());
    } else {
        const auto colon = address.rfind(':');
        if (colon == std::string::npos) throw std::runtime_error("redis address must be a socket path or host:port");
        ctx = redisConnect(address.substr(0, colon).c_str(), std::stoi(address.substr(colon + 1)));
    }
    if (ctx == nullptr) throw std::runtime_error("redis: cannot allocate a context");
    if (ctx->err != 0) {
        const std::string message = std::string("redis: ") + ctx->errstr;
        redisFree(ctx);
        throw std::runtime_error(message);
    }
    return ctx;
}

struct ReplyDeleter {
    void operator()(redisReply *r) const { freeReplyObject(r); }
};
using Reply = std::unique_ptr<redisReply, ReplyDeleter>;

Reply checked(redisContext *ctx, void *raw) {
    if (raw == nullptr) throw std::runtime_error(std::string("redis: ") + ctx->errstr);
    Reply reply(static_cast<redisReply *>(raw));
    if (reply->type == REDIS_REPLY_ERROR) throw std::runtime_error(std::string("redis: ") + reply->str);
    return reply;
}

// EVALSHA sha 1 key emission_us burst cost; the script returns {allowed, remaining, retry_after_us,
// reset_after_us}.
class RedisWorker : public Worker {
  public:
    RedisWorker(std::string address, std::string sha, long emission_us, long burst)
        : address_(std::move(address)),
          sha_(std::move(sha)),
          emission_(std::to_string(emission_us)),
          burst_(std::to_string(burst)),
          ctx_(redis_connect(address_)) {}
    ~RedisWorker() override { redisFree(ctx_); }
    void call(const std::string &key, Counters &counters) override {
        const char *argv[] = {"EVALSHA", sha_.c_str(), "1", key.c_str(), emission_.c_str(), burst_.c_str(), "1"};
        const size_t lens[] = {7, sha_.size(), 1, key.size(), emission_.size(), burst_.size(), 1};
        const Reply reply = checked(ctx_, redisCommandArgv(ctx_, 7, argv, lens));
        if (reply->type != REDIS_REPLY_ARRAY || reply->elements < 1 || reply->element[0]->type != REDIS_REPLY_INTEGER)
            throw std::runtime_error("redis: unexpected reply from the GCRA script");
        if (reply->element[0]->integer != 1) ++counters.denied;
    }
    void recover() override {
        if (ctx_->err == 0) return;
        redisFree(ctx_);
        ctx_ = redis_connect(address_);
    }

  private:
    std::string address_, sha_, emission_, burst_;
    redisContext *ctx_;
};

class RedisSystem : public System {
  public:
    RedisSystem(std::string address, std::string sha, long emission_us, long burst)
        : System("redis", "Redis GCRA Lua (EVALSHA)"),
          address_(std::move(address)),
          sha_(std::move(sha)),
          emission_us_(emission_us),
          burst_(burst) {}
    std::unique_ptr<Worker> connect() override {
        return std::make_unique<RedisWorker>(address_, sha_, emission_us_, burst_);
    }

  private:
    std::string address_, sha_;
    long emission_us_, burst_;
};
#endif

}  // namespace

std::unique_ptr<System> make_select1(const Params &p) {
    return std::make_unique<PgSystem>(
        "select1", "SELECT 1", p.conninfo, SELECT1_SQL,
        [](pqxx::transaction_base &tx, const std::string &) { return compat::exec_prepared(tx, "q"); }, nullptr);
}

std::unique_ptr<System> make_update_floor(const Params &p) {
    return std::make_unique<PgSystem>(
        "update", "UPDATE one indexed row", p.conninfo, UPDATE_SQL,
        [](pqxx::transaction_base &tx, const std::string &key) { return compat::exec_prepared(tx, "q", key); },
        nullptr);
}

std::unique_ptr<System> make_upsert(const Params &p) {
    return std::make_unique<PgSystem>(
        "upsert", "SQL token bucket (INSERT .. ON CONFLICT)", p.conninfo, UPSERT_SQL,
        [refill = p.refill_per_sec, window = p.window_seconds](pqxx::transaction_base &tx, const std::string &key) {
            return compat::exec_prepared(tx, "q", key, refill, window);
        },
        first_non_negative);
}

std::unique_ptr<System> make_seed(const Params &p) {
    return std::make_unique<PgSystem>(
        "seed", "seed PL/pgSQL token bucket", p.conninfo, SEED_SQL,
        [refill = p.refill_per_sec, window = p.window_seconds](pqxx::transaction_base &tx, const std::string &key) {
            return compat::exec_prepared(tx, "q", key, refill, window);
        },
        first_non_negative);
}

std::unique_ptr<System> make_ext(const Params &p) {
    return std::make_unique<PgSystem>(
        "ext", "rate_limit_request (table)", p.conninfo, EXT_SQL,
        [limit = p.limit](pqxx::transaction_base &tx, const std::string &key) {
            return compat::exec_prepared(tx, "q", key, limit);
        },
        first_is_true);
}

std::unique_ptr<System> make_ext_sql(const Params &p) {
    return std::make_unique<PgSystem>(
        "ext_sql", "rate_limit_request (table), SQL path", p.conninfo, EXT_SQL,
        [limit = p.limit](pqxx::transaction_base &tx, const std::string &key) {
            return compat::exec_prepared(tx, "q", key, limit);
        },
        first_is_true, SQL_PATH_SETTING);
}

std::unique_ptr<System> make_ext_record(const Params &p, const std::string &storage) {
    const bool durable = storage == "durable";
    return std::make_unique<PgSystem>(
        durable ? "ext_record" : "ext_" + storage + "_record",
        durable ? "rate_limit_request as a scalar" : "rate_limit_request (" + storage + ") as a scalar", p.conninfo,
        EXT_RECORD_SQL,
        [limit = storage_limit(p, storage)](pqxx::transaction_base &tx, const std::string &key) {
            return compat::exec_prepared(tx, "q", key, limit);
        },
        // "(t,999999999,00:00:00,00:00:00,f)"
        [](const pqxx::result &r) { return r.size() == 1 && r[0][0].c_str()[1] == 't'; });
}

std::unique_ptr<System> make_ext_denied(const Params &p) {
    return std::make_unique<PgSystem>(
        "ext_denied", "rate_limit_request, denied", p.conninfo, EXT_SQL,
        [limit = p.deny_limit](pqxx::transaction_base &tx, const std::string &key) {
            return compat::exec_prepared(tx, "q", key, limit);
        },
        first_is_true);
}

const std::string &storage_limit(const Params &p, const std::string &storage) {
    if (storage == "durable") return p.limit;
    if (storage == "unlogged") return p.unlogged_limit;
    if (storage == "memory") return p.memory_limit;
    throw std::invalid_argument("unknown storage mode " + storage);
}

namespace {

// rate_limit_request on another limit than 'bench': "ext_<variant>" (a storage mode or an algorithm).
std::unique_ptr<System> make_ext_variant(const Params &p, const std::string &variant, const std::string &limit) {
    return std::make_unique<PgSystem>(
        "ext_" + variant, "rate_limit_request (" + variant + ")", p.conninfo, EXT_SQL,
        [limit](pqxx::transaction_base &tx, const std::string &key) {
            return compat::exec_prepared(tx, "q", key, limit);
        },
        first_is_true);
}

}  // namespace

std::unique_ptr<System> make_ext_storage(const Params &p, const std::string &storage) {
    return make_ext_variant(p, storage, storage_limit(p, storage));
}

std::unique_ptr<System> make_ext_nostats(const Params &p, const std::string &storage) {
    const std::string &limit = storage_limit(p, storage);
    return std::make_unique<PgSystem>(
        storage == "durable" ? "ext_nostats" : "ext_" + storage + "_nostats",
        "rate_limit_request (" + storage + "), statistics off", p.conninfo, EXT_SQL,
        [limit](pqxx::transaction_base &tx, const std::string &key) {
            return compat::exec_prepared(tx, "q", key, limit);
        },
        first_is_true, STATS_OFF_SETTING);
}

const std::string &algorithm_limit(const Params &p, const std::string &algorithm) {
    if (algorithm == "gcra") return p.gcra_limit;
    if (algorithm == "fixed_window") return p.fixed_window_limit;
    if (algorithm == "sliding_window") return p.sliding_window_limit;
    if (algorithm == "calendar_month") return p.calendar_month_limit;
    throw std::invalid_argument("unknown algorithm " + algorithm);
}

std::unique_ptr<System> make_ext_algorithm(const Params &p, const std::string &algorithm) {
    return make_ext_variant(p, algorithm, algorithm_limit(p, algorithm));
}

std::unique_ptr<System> make_seed_serializable(const Params &p) {
    return std::make_unique<SerializableSystem>(
        "seed_ser", "seed PL/pgSQL, SERIALIZABLE + retries", p, SEED_SQL,
        [refill = p.refill_per_sec, window = p.window_seconds](pqxx::work &tx, const std::string &key) {
            return first_non_negative(compat::exec_prepared(tx, "q", key, refill, window));
        });
}

std::unique_ptr<System> make_ext_serializable(const Params &p) {
    return ext_serializable("ext_ser", "rate_limit_request via client library, SERIALIZABLE", p);
}

std::unique_ptr<System> make_ext_serializable_patient(const Params &p) {
    Params patient = p;
    patient.retry_max_attempts = 100;
    patient.retry_max_elapsed_ms = 30000;
    return ext_serializable("ext_ser_patient", "same, max_attempts=100, max_elapsed=30 s", patient);
}

std::unique_ptr<System> make_ext_serializable_sql(const Params &p) {
    return ext_serializable("ext_ser_sql", "same, SQL path", p, SQL_PATH_SETTING);
}

std::unique_ptr<System> make_ext_serializable_shards(const Params &p, int shards) {
    Params sharded = p;
    sharded.limit = "bench_shards" + std::to_string(shards);
    return ext_serializable("ext_ser_shards" + std::to_string(shards),
                            "same, a limit with shards => " + std::to_string(shards), sharded);
}

void check_access_paths(pqxx::connection &admin, const Params &p) {
    // Once a request has loaded the library, the setting must be the library's (an enum; an extension
    // without it would keep a placeholder, a string, and measure the direct path under the SQL path's
    // name) and read the path asked for.
    for (const char *path : {"direct", "sql"}) {
        pqxx::work tx(admin);
        compat::exec0(tx, std::string("SET LOCAL pg_ratelimit.access_path = ") + path);
        tx.exec("SELECT * FROM rate_limit_request('k1', " + tx.quote(p.limit) + ")");
        const pqxx::row setting =
            compat::exec1(tx, "SELECT vartype, setting FROM pg_settings WHERE name = 'pg_ratelimit.access_path'");
        tx.abort();
        if (setting[0].as<std::string>() != "enum" || setting[1].as<std::string>() != path)
            throw std::runtime_error(std::string("pg_ratelimit.access_path = ") + path + ": the setting reads " +
                                     setting[0].as<std::string>() + " " + setting[1].as<std::string>() +
                                     "; is the installed extension one with both access paths?");
    }
}

bool have_client_library() {
#ifdef BENCH_HAVE_CLIENT
    return true;
#else
    return false;
#endif
}

std::string statement_sql(const std::string &id) {
    if (id == "select1") return SELECT1_SQL;
    if (id == "update") return UPDATE_SQL;
    if (id == "upsert") return UPSERT_SQL;
    if (id == "seed" || id == "seed_ser") return SEED_SQL;
    if (id == "ext" || id == "ext_denied" || id == "ext_unlogged" || id == "ext_memory") return EXT_SQL;
    for (const char *algorithm : OTHER_ALGORITHMS)
        if (id == std::string("ext_") + algorithm) return EXT_SQL;
    if (id.rfind("many_", 0) == 0) return MANY_SQL;
    if (id == "ext_sql") return std::string(EXT_SQL) + " (after " + SQL_PATH_SETTING + ")";
    if (id == "ext_nostats" || id == "ext_memory_nostats")
        return std::string(EXT_SQL) + " (after " + STATS_OFF_SETTING + ")";
    if (id == "ext_record" || id == "ext_memory_record") return EXT_RECORD_SQL;
    if (id == "ext_ser" || id == "ext_ser_patient" || id == "ext_ser_sql" || id.rfind("ext_ser_shards", 0) == 0)
        return std::string(have_client_library()
                               ? "Limiter::request(tx, key, limit) inside run_transaction(SERIALIZABLE)"
                               : EXT_SQL) +
               (id == "ext_ser_sql" ? std::string(" (after ") + SQL_PATH_SETTING + ")" : "");
    if (id == "redis") return "EVALSHA <gcra.lua> 1 key emission_us burst 1";
    return "";
}

#ifdef BENCH_HAVE_HIREDIS
bool have_redis_support() { return true; }

std::unique_ptr<System> make_redis_gcra(const std::string &address, const std::string &sha, long emission_us,
                                        long burst) {
    return std::make_unique<RedisSystem>(address, sha, emission_us, burst);
}

std::string redis_script_load(const std::string &address, const std::string &script) {
    redisContext *ctx = redis_connect(address);
    try {
        const Reply reply = checked(ctx, redisCommand(ctx, "SCRIPT LOAD %b", script.data(), script.size()));
        if (reply->type != REDIS_REPLY_STRING) throw std::runtime_error("redis: SCRIPT LOAD returned no SHA1");
        std::string sha(reply->str, reply->len);
        redisFree(ctx);
        return sha;
    } catch (...) {
        redisFree(ctx);
        throw;
    }
}

void redis_preload(const std::string &address, const std::string &sha, const std::vector<std::string> &keys,
                   long emission_us, long burst) {
    redisContext *ctx = redis_connect(address);
    const std::string emission = std::to_string(emission_us), burst_s = std::to_string(burst);
    try {
        constexpr std::size_t BATCH = 1000;  // pipelined: one round trip per batch
        for (std::size_t from = 0; from < keys.size(); from += BATCH) {
            const std::size_t to = std::min(keys.size(), from + BATCH);
            for (std::size_t i = from; i < to; ++i) {
                const char *argv[] = {"EVALSHA",        sha.c_str(),     "1", keys[i].c_str(),
                                      emission.c_str(), burst_s.c_str(), "1"};
                const size_t lens[] = {7, sha.size(), 1, keys[i].size(), emission.size(), burst_s.size(), 1};
                if (redisAppendCommandArgv(ctx, 7, argv, lens) != REDIS_OK)
                    throw std::runtime_error(std::string("redis: ") + ctx->errstr);
            }
            for (std::size_t i = from; i < to; ++i) {
                void *raw = nullptr;
                if (redisGetReply(ctx, &raw) != REDIS_OK)
                    throw std::runtime_error(std::string("redis: ") + ctx->errstr);
                checked(ctx, raw);
            }
        }
        redisFree(ctx);
    } catch (...) {
        redisFree(ctx);
        throw;
    }
}

std::string redis_version(const std::string &address) {
    redisContext *ctx = redis_connect(address);
    std::string version = "unknown";
    try {
        const Reply reply = checked(ctx, redisCommand(ctx, "INFO server"));
        const std::string info(reply->str, reply->len);
        const auto at = info.find("redis_version:");
        if (at != std::string::npos) {
            const auto from = at + 14;
            version = info.substr(from, info.find_first_of("\r\n", from) - from);
        }
    } catch (...) {
        redisFree(ctx);
        throw;
    }
    redisFree(ctx);
    return version;
}
#else
bool have_redis_support() { return false; }
std::unique_ptr<System> make_redis_gcra(const std::string &, const std::string &, long, long) {
    throw std::runtime_error("built without hiredis (install libhiredis-dev and rebuild)");
}
std::string redis_script_load(const std::string &, const std::string &) {
    throw std::runtime_error("built without hiredis (install libhiredis-dev and rebuild)");
}
void redis_preload(const std::string &, const std::string &, const std::vector<std::string> &, long, long) {
    throw std::runtime_error("built without hiredis (install libhiredis-dev and rebuild)");
}
std::string redis_version(const std::string &) { return "n/a"; }
#endif

}  // namespace bench
