// The measured systems. Every PostgreSQL one is a prepared statement run in autocommit (one transaction
// per call, no BEGIN/COMMIT round trips) on its own libpqxx connection per client, except the
// SERIALIZABLE ones, which go through the client library's run_transaction retry helper.
#pragma once

#include <chrono>
#include <memory>
#include <pqxx/pqxx>
#include <string>
#include <vector>

#include "bench.hpp"

namespace bench {

// The limits and parameters every system is configured with, so that requests are admitted (the
// realistic hot path: an admitted request writes).
struct Params {
    std::string conninfo;                   // libpq connection string ("" = the PG* environment variables)
    int refill_per_sec = 1000000;           // seed and single-statement bucket: tokens per second...
    int window_seconds = 60;                // ...and seconds of burst (capacity = refill * window, fits an int)
    std::string limit = "bench";            // pg_ratelimit limit that admits (rate 1e9 per second)
    std::string deny_limit = "bench_deny";  // pg_ratelimit limit whose keys are all exhausted
    // The same generosity as `limit`, with storage => 'unlogged' and 'memory' (bench/sql/setup.sql).
    std::string unlogged_limit = "bench_unlogged";
    std::string memory_limit = "bench_memory";
    // The same generosity as `limit` (a token bucket) under the other algorithms (bench/sql/setup.sql).
    std::string gcra_limit = "bench_gcra";
    std::string fixed_window_limit = "bench_fixed_window";
    std::string sliding_window_limit = "bench_sliding_window";
    std::string calendar_month_limit = "bench_calendar_month";
    int batch = 1000;  // keys per rate_limit_request_many call
    // The client library's retry policy for the SERIALIZABLE scenario; 0 keeps the library's default.
    int retry_max_attempts = 0;
    int retry_max_elapsed_ms = 0;
};

std::unique_ptr<System> make_select1(const Params &p);
std::unique_ptr<System> make_update_floor(const Params &p);
std::unique_ptr<System> make_upsert(const Params &p);
std::unique_ptr<System> make_seed(const Params &p);
std::unique_ptr<System> make_ext(const Params &p);
// The same statement on connections that set pg_ratelimit.access_path = sql: the extension reads and writes
// its rows with prepared SQL through SPI (the path for YugabyteDB and non-heap tables) instead of the index
// and heap calls of the default (direct) path.
std::unique_ptr<System> make_ext_sql(const Params &p);
std::unique_ptr<System> make_ext_denied(const Params &p);
// rate_limit_request on the limits with storage => 'unlogged' and 'memory' (ids ext_unlogged, ext_memory);
// make_ext is the durable one.
std::unique_ptr<System> make_ext_storage(const Params &p, const std::string &storage);
// rate_limit_request_many with p.batch keys per call, drawn uniformly from `keys` by the worker itself
// (whatever key distribution the cell names), on the limit of `storage` ("durable", "unlogged",
// "memory"; ids many_durable, many_unlogged, many_memory). `keys` must outlive the system's workers.
std::unique_ptr<System> make_ext_many(const Params &p, const std::string &storage,
                                      const std::vector<std::string> &keys);
// The limit a storage mode's systems use: p.limit, p.unlogged_limit or p.memory_limit.
const std::string &storage_limit(const Params &p, const std::string &storage);
// rate_limit_request, the statement of make_ext, on the limit of `algorithm` (one of OTHER_ALGORITHMS;
// ids ext_gcra, ext_fixed_window, ext_sliding_window, ext_calendar_month).
std::unique_ptr<System> make_ext_algorithm(const Params &p, const std::string &algorithm);
// The limit an algorithm's system uses: p.gcra_limit, p.fixed_window_limit, p.sliding_window_limit or
// p.calendar_month_limit.
const std::string &algorithm_limit(const Params &p, const std::string &algorithm);
// Optional: SELECT rate_limit_request(...), the decision as one record column (no FunctionScan), on the
// durable limit ("ext_record") or the memory one ("ext_memory_record").
std::unique_ptr<System> make_ext_record(const Params &p, const std::string &storage);
std::unique_ptr<System> make_seed_serializable(const Params &p);
// The client library with its default RetryPolicy (what an application gets), and with the patient
// policy of the library's own example for a hot key (max_attempts 100, max_elapsed 30 s).
std::unique_ptr<System> make_ext_serializable(const Params &p);
std::unique_ptr<System> make_ext_serializable_patient(const Params &p);
// The client library with its default RetryPolicy, on connections that use the SQL path.
std::unique_ptr<System> make_ext_serializable_sql(const Params &p);
// The client library with its default RetryPolicy on the limit with `shards` hot-key shards
// ("bench_shards<N>", bench/sql/setup.sql; 4 or 16), id "ext_ser_shards<N>"; ext_ser is the one-shard case.
std::unique_ptr<System> make_ext_serializable_shards(const Params &p, int shards);

// rate_limit_request on the limit of `storage` ("durable" or "memory") on connections with statistics off
// (extension/stats/stats.hpp): ids ext_nostats and ext_memory_nostats, for measuring what counting costs.
constexpr const char *STATS_OFF_SETTING = "SET pg_ratelimit.stats = off";
std::unique_ptr<System> make_ext_nostats(const Params &p, const std::string &storage);

// The session setting the SQL path's systems send on each connection, and the index scans that tell which
// path a request took: throws std::runtime_error unless a request with the setting reads the primary key
// and not the lookup index, and one without it the other way round (an extension that does not know the
// setting would keep it as a placeholder and silently take the direct path). Runs in a transaction that it
// rolls back; needs the limit `p.limit` and its preloaded key "k1".
constexpr const char *SQL_PATH_SETTING = "SET pg_ratelimit.access_path = sql";
void check_access_paths(pqxx::connection &admin, const Params &p);

// Starts a new connection's session, before any transaction object holds it: names it "bench:ID"
// (pg_stat_activity.application_name, the server log's %a) and runs `setting` (nullptr: none).
void start_session(pqxx::connection &conn, const std::string &system_id, const char *setting);

// The statement of the rate_limit_request_many systems (bench/src/batch_systems.cpp).
extern const char *const MANY_SQL;

// Whether the client library was part of the build (otherwise the SERIALIZABLE scenario uses a local
// stand-in for run_transaction, and says so in the results).
bool have_client_library();

// The SQL text of each statement, for the report.
std::string statement_sql(const std::string &system_id);

// Redis GCRA through EVALSHA. `address` is a unix socket path (contains '/') or host:port; `sha` is the
// SCRIPT LOAD result of bench/gcra.lua; emission_us and burst configure the GCRA (see gcra.lua).
bool have_redis_support();
std::unique_ptr<System> make_redis_gcra(const std::string &address, const std::string &sha, long emission_us,
                                        long burst);

// Loads the Lua script on the server and returns its SHA1; preloads keys (one EVALSHA each, pipelined);
// returns the server's version. All throw std::runtime_error on failure.
std::string redis_script_load(const std::string &address, const std::string &script);
void redis_preload(const std::string &address, const std::string &sha, const std::vector<std::string> &keys,
                   long emission_us, long burst);
std::string redis_version(const std::string &address);

}  // namespace bench
