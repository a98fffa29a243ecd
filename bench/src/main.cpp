// pg_ratelimit_bench: rate_limit_request against its references, interleaved, in one run on one server.
//
//   pg_ratelimit_bench [--quick] [options]        (bench/run.sh starts the servers and calls this)
//
// For each configuration cell (synchronous_commit x key distribution x clients, plus SERIALIZABLE cells at
// 8 clients: the hot key, keys uniform over the preloaded ones, a new key for every call), every system runs in
// rotating order for several rounds, each a time-boxed run (warm-up, then a measured window) with one thread and one
// connection per client. Figures are medians over the rounds, and ratios pair the systems' runs of the same round, so
// that drift of a noisy machine hits every system alike. Writes results.{csv,json}, report.md and plot.tsv into --out.
#include <sys/utsname.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <pqxx/pqxx>
#include <sstream>
#include <stdexcept>
#include <thread>

#include "bench.hpp"
#include "footprint.hpp"
#include "pqxx_compat.hpp"
#include "report.hpp"
#include "systems.hpp"

#ifndef BENCH_SOURCE_DIR
#define BENCH_SOURCE_DIR "bench"
#endif

namespace bench {
namespace {

namespace compat = pg_ratelimit::compat;

struct Options {
    std::string mode = "full";
    // Many short runs rather than a few long ones: on a shared machine the load changes within seconds,
    // and the systems' runs of one round must see the same conditions for their ratios to hold.
    int rounds = 30;
    double warmup = 0.03;
    double seconds = 0.5;
    double settle = 3;  // seconds per system before the first cell, unmeasured
    std::vector<int> clients{1, 2, 8};
    std::vector<bool> syncs{false, true};
    std::vector<Dist> dists{Dist::uniform, Dist::hot};
    std::vector<std::string> systems{"select1", "update",     "upsert",     "seed", "ext",
                                     "ext_sql", "ext_record", "ext_denied", "redis"};
    int serializable_clients = 8;  // 0: no SERIALIZABLE cell
    // The SERIALIZABLE cells' keys: the hot key measures the retries of true conflicts; uniform keys and new
    // keys, where no two calls touch the same row, measure false ones (predicate locks coarser than a row).
    std::vector<Dist> serializable_dists{Dist::hot, Dist::uniform, Dist::fresh};
    bool serializable_only = false;
    int keys = 100000;
    // The batch cell (one per synchronous_commit setting, uniform keys) of the rate_limit_request_many
    // systems, with the single-call systems of the run beside them.
    int batch_clients = 1;
    // One more cell (synchronous_commit=off, uniform keys, 2 clients) with this server setting: on
    // PostgreSQL 15 every async commit wakes the WAL writer (a signal and a context switch) unless it
    // flushes as it writes, which costs every writing system alike (see BENCHMARKS.md).
    std::string extra_setting = "wal_writer_flush_after=0";
    std::string redis;  // socket path or host:port; empty: no Redis
    std::string out = "bench/results/latest";
    // Statements run after the keys are loaded, before VACUUM ANALYZE (e.g. an index rebuilt with another
    // fillfactor, to see what an index's page size does to SERIALIZABLE conflicts).
    std::vector<std::string> after_load;
    std::string source_dir = BENCH_SOURCE_DIR;
    Params params;
    Meta extra_meta;
};

[[noreturn]] void usage(const std::string &error) {
    if (!error.empty()) std::cerr << "pg_ratelimit_bench: " << error << "\n\n";
    std::cerr << R"(usage: pg_ratelimit_bench [options]
  --quick                 quick preset: 8 rounds of 0.015 s warm-up + 0.085 s per system and cell (< 2 min)
  --rounds N              rounds per cell (full: 30)
  --warmup S              warm-up seconds per run (full: 0.03; connections stay open across rounds)
  --seconds S             measured seconds per run (full: 0.5)
  --settle S              seconds each system runs unmeasured after loading, before the first cell
                          (full: 3, quick: 1)
  --clients LIST          client counts (1,2,8)
  --sync LIST             synchronous_commit settings (off,on)
  --keys-dist LIST        key distributions (uniform,hot)
  --systems LIST          select1,update,upsert,seed,ext,ext_sql,ext_record,ext_denied,redis (the default);
                          ext_sql is ext on connections with pg_ratelimit.access_path = sql; ext_record is
                          the call in the seed's form, as a scalar: SELECT rate_limit_request($1, $2);
                          also ext_unlogged and ext_memory (ext is durable: limits with storage =>
                          'unlogged' and 'memory'; memory needs shared_preload_libraries = 'pg_ratelimit')
                          and ext_memory_record (ext_memory as a scalar, like ext_record)
                          and ext_gcra, ext_fixed_window, ext_sliding_window (ext is the token bucket: the
                          same statement on limits with algorithm => 'gcra', 'fixed_window', 'sliding_window')
                          and ext_calendar_month (a fixed window of calendar months in Europe/Paris)
                          and ext_nostats, ext_memory_nostats (ext and ext_memory on connections with
                          pg_ratelimit.stats = off: what counting rate_limit_stats costs)
                          and many_durable, many_unlogged, many_memory (rate_limit_request_many, --batch
                          keys per call, in a cell of their own per synchronous_commit setting: uniform
                          keys, --batch-clients clients, with the run's single-call systems beside them)
  --serializable-clients N  clients of the SERIALIZABLE cells (8; 0: none)
  --serializable-keys LIST  their keys: hot,uniform,new (all three); new: a key no call has used, every call
                          creates a row; the hot key's cell also runs limits with 4 and 16 hot-key shards
  --serializable-only     only the SERIALIZABLE cells (with SELECT 1 as the round-trip reference)
  --extra-cell NAME=VALUE one more cell (sync off, uniform, 2 clients) with this server setting
                          (wal_writer_flush_after=0)
  --no-extra-cell         no such cell
  --keys N                key space of the uniform distribution (100000)
  --batch N               keys per rate_limit_request_many call of the many_* systems (1000)
  --batch-clients N       clients of the batch cell (1)
  --redis ADDR            Redis unix socket path or host:port (none: Redis not measured)
  --conninfo STR          libpq connection string ("" = PG* environment); needs a superuser
  --retry-max-attempts N  client library retry policy for SERIALIZABLE (library default)
  --retry-max-elapsed-ms N
  --out DIR               where results go (bench/results/latest)
  --after-load SQL        run SQL after the keys are loaded, before VACUUM ANALYZE (repeatable)
  --source-dir DIR        the bench/ directory (sql/, gcra.lua)
  --meta KEY=VALUE        recorded in the results (repeatable)
  --self-test             check the statistics code and exit
)";
    std::exit(error.empty() ? 0 : 2);
}

std::vector<std::string> split(const std::string &s) {
    std::vector<std::string> out;
    std::stringstream in(s);
    std::string item;
    while (std::getline(in, item, ','))
        if (!item.empty()) out.push_back(item);
    return out;
}

double to_double(const std::string &s, const char *what) {
    try {
        std::size_t used = 0;
        const double v = std::stod(s, &used);
        if (used == s.size() && v >= 0) return v;
    } catch (const std::exception &) {
    }
    usage(std::string("bad value for ") + what + ": " + s);
}

int to_int(const std::string &s, const char *what) {
    const double v = to_double(s, what);
    if (v != std::floor(v) || v > 1e9) usage(std::string("bad value for ") + what + ": " + s);
    return static_cast<int>(v);
}

// ext_gcra, ext_fixed_window, ext_sliding_window, ext_calendar_month: rate_limit_request on the limit of
// another algorithm (or a calendar).
bool is_algorithm_system(const std::string &id) {
    return std::any_of(OTHER_ALGORITHMS.begin(), OTHER_ALGORITHMS.end(),
                       [&](const char *algorithm) { return id == std::string("ext_") + algorithm; });
}

Options parse(int argc, char **argv) {
    Options o;
    for (int i = 1; i < argc; ++i) {
        const std::string arg = argv[i];
        const auto value = [&]() -> std::string {
            if (i + 1 >= argc) usage(arg + " needs a value");
            return argv[++i];
        };
        if (arg == "--quick") {
            o.mode = "quick";
            o.rounds = 8;
            o.warmup = 0.015;
            o.seconds = 0.085;
            o.settle = 1;
        } else if (arg == "--rounds") {
            o.rounds = std::max(1, to_int(value(), "--rounds"));
        } else if (arg == "--warmup") {
            o.warmup = to_double(value(), "--warmup");
        } else if (arg == "--seconds") {
            o.seconds = to_double(value(), "--seconds");
            if (o.seconds <= 0) usage("--seconds must be positive");
        } else if (arg == "--settle") {
            o.settle = to_double(value(), "--settle");
        } else if (arg == "--clients") {
            o.clients.clear();
            for (const auto &c : split(value())) o.clients.push_back(std::max(1, to_int(c, "--clients")));
        } else if (arg == "--sync") {
            o.syncs.clear();
            for (const auto &s : split(value())) {
                if (s != "on" && s != "off") usage("--sync takes on and/or off");
                o.syncs.push_back(s == "on");
            }
        } else if (arg == "--keys-dist") {
            o.dists.clear();
            for (const auto &d : split(value())) {
                if (d != "uniform" && d != "hot") usage("--keys-dist takes uniform and/or hot");
                o.dists.push_back(d == "uniform" ? Dist::uniform : Dist::hot);
            }
        } else if (arg == "--systems") {
            o.systems = split(value());
        } else if (arg == "--serializable-clients") {
            o.serializable_clients = to_int(value(), "--serializable-clients");
        } else if (arg == "--serializable-keys") {
            o.serializable_dists.clear();
            for (const auto &d : split(value())) {
                if (d != "uniform" && d != "hot" && d != "new") usage("--serializable-keys takes hot, uniform, new");
                o.serializable_dists.push_back(d == "uniform" ? Dist::uniform : d == "hot" ? Dist::hot : Dist::fresh);
            }
        } else if (arg == "--serializable-only") {
            o.serializable_only = true;
        } else if (arg == "--extra-cell") {
            o.extra_setting = value();
            if (o.extra_setting.find('=') == std::string::npos) usage("--extra-cell takes NAME=VALUE");
        } else if (arg == "--no-extra-cell") {
            o.extra_setting.clear();
        } else if (arg == "--keys") {
            o.keys = std::max(1, to_int(value(), "--keys"));
        } else if (arg == "--batch") {
            o.params.batch = std::max(1, to_int(value(), "--batch"));
        } else if (arg == "--batch-clients") {
            o.batch_clients = std::max(1, to_int(value(), "--batch-clients"));
        } else if (arg == "--redis") {
            o.redis = value();
        } else if (arg == "--conninfo") {
            o.params.conninfo = value();
        } else if (arg == "--retry-max-attempts") {
            o.params.retry_max_attempts = to_int(value(), "--retry-max-attempts");
        } else if (arg == "--retry-max-elapsed-ms") {
            o.params.retry_max_elapsed_ms = to_int(value(), "--retry-max-elapsed-ms");
        } else if (arg == "--out") {
            o.out = value();
        } else if (arg == "--after-load") {
            o.after_load.push_back(value());
        } else if (arg == "--source-dir") {
            o.source_dir = value();
        } else if (arg == "--meta") {
            const std::string kv = value();
            const auto eq = kv.find('=');
            if (eq == std::string::npos) usage("--meta takes KEY=VALUE");
            o.extra_meta.emplace_back(kv.substr(0, eq), kv.substr(eq + 1));
        } else if (arg == "--help" || arg == "-h") {
            usage("");
        } else {
            usage("unknown option " + arg);
        }
    }
    for (const auto &s : o.systems)
        if (s != "select1" && s != "update" && s != "upsert" && s != "seed" && s != "ext" && s != "ext_sql" &&
            s != "ext_denied" && s != "ext_record" && s != "ext_memory_record" && s != "redis" && s != "ext_unlogged" &&
            s != "ext_memory" && s != "many_durable" && s != "many_unlogged" && s != "many_memory" &&
            s != "ext_nostats" && s != "ext_memory_nostats" && !is_algorithm_system(s))
            usage("unknown system " + s);
    if (o.redis.empty()) o.systems.erase(std::remove(o.systems.begin(), o.systems.end(), "redis"), o.systems.end());
    if (o.serializable_only && (o.serializable_clients == 0 || o.serializable_dists.empty()))
        usage("--serializable-only needs SERIALIZABLE cells");
    return o;
}

std::string read_file(const std::string &path) {
    std::ifstream in(path);
    if (!in) throw std::runtime_error("cannot read " + path);
    std::stringstream buffer;
    buffer << in.rdbuf();
    return buffer.str();
}

std::string first_line_matching(const std::string &path, const std::string &prefix) {
    std::ifstream in(path);
    std::string line;
    while (std::getline(in, line))
        if (line.rfind(prefix, 0) == 0) {
            auto colon = line.find(':');
            std::string v = colon == std::string::npos ? line : line.substr(colon + 1);
            v.erase(0, v.find_first_not_of(" \t"));
            return v;
        }
    return "";
}

std::string utc_now() {
    const std::time_t t = std::time(nullptr);
    char buf[32];
    std::strftime(buf, sizeof(buf), "%Y-%m-%d %H:%M:%S UTC", std::gmtime(&t));
    return buf;
}

std::string short_rate(double tps) {
    char buf[32];
    if (tps >= 1000)
        std::snprintf(buf, sizeof(buf), "%.1fk", tps / 1000);
    else
        std::snprintf(buf, sizeof(buf), "%.0f", tps);
    return buf;
}

// Timed step of the set-up, reported on one line.
template <typename F>
void step(const std::string &what, F &&f) {
    std::cerr << "  " << what << " ... " << std::flush;
    const Clock::time_point t0 = Clock::now();
    f();
    std::cerr << std::chrono::duration<double>(Clock::now() - t0).count() << " s\n";
}

bool uses_storage(const Options &o, const std::string &storage) {
    for (const auto &s : o.systems)
        if (s == "ext_" + storage || s == "many_" + storage) return true;
    return false;
}

bool uses_system(const Options &o, const std::string &id) {
    return std::find(o.systems.begin(), o.systems.end(), id) != o.systems.end();
}

void prepare_database(pqxx::connection &admin, const Options &o, Meta &footprints) {
    const std::string sql_dir = o.source_dir + "/sql/";
    const std::string n = std::to_string(o.keys);
    const std::string refill = std::to_string(o.params.refill_per_sec);
    const std::string window = std::to_string(o.params.window_seconds);
    pqxx::nontransaction tx(admin);
    std::cerr << "preparing the database (" << o.keys << " keys per system)\n";
    step("tables, limits and the seed's function", [&] {
        tx.exec(read_file(sql_dir + "setup.sql"));
        tx.exec(read_file(sql_dir + "seed_token_bucket.sql"));
    });
    // Every system starts with all keys present, so the measured steady state updates existing rows.
    step("preload UPDATE floor",
         [&] { tx.exec("INSERT INTO bench_update SELECT 'k' || g, 0 FROM generate_series(0, " + n + " - 1) g"); });
    step("preload single-statement bucket", [&] {
        tx.exec("INSERT INTO bench_bucket SELECT 'k' || g, " + window + " * " + refill +
                " - 1, clock_timestamp() FROM generate_series(0, " + n + " - 1) g");
    });
    step("preload seed function (its first calls insert)", [&] {
        tx.exec("SELECT count(rate_limiting_token_bucket_request('k' || g, " + refill + ", " + window +
                ")) FROM generate_series(0, " + n + " - 1) g");
    });
    // The limits of the other storage modes and algorithms only when a system uses them (setup.sql defines
    // the memory one only when the server preloads the extension), so that the state table holds no rows
    // that no system reads.
    std::vector<std::string> limits{o.params.limit};
    for (const std::string storage : {"unlogged", "memory"}) {
        if (!uses_storage(o, storage)) continue;
        const std::string &limit = storage_limit(o.params, storage);
        if (tx.exec("SELECT 1 FROM rate_limit_config WHERE name = " + tx.quote(limit)).empty()) {
            std::string message = "the limit " + limit;
            message += " (storage " + storage + ") is missing: memory needs shared_preload_libraries = 'pg_ratelimit'";
            throw std::runtime_error(message);
        }
        limits.push_back(limit);
    }
    const std::size_t storage_modes = limits.size();
    for (const char *algorithm : OTHER_ALGORITHMS)
        if (uses_system(o, std::string("ext_") + algorithm)) limits.push_back(algorithm_limit(o.params, algorithm));
    const auto preload = [&](const std::string &limit) {
        tx.exec("SELECT count(*) FROM generate_series(0, " + n + " - 1) g, rate_limit_request('k' || g, " +
                tx.quote(limit) + ") r WHERE r.allowed");
    };
    std::string names;
    for (const auto &limit : limits) names += (names.empty() ? "" : ", ") + limit;
    step("preload rate_limit_request (admitting limits: " + names + ")", [&] {
        for (const auto &limit : limits) preload(limit);
    });
    // Each storage mode now holds the keys of its limits (one, unless other algorithms' limits share the
    // durable table): what an entry costs in each, before the denying limit's keys join the durable table.
    if (storage_modes > 1) footprints = storage_footprint(tx, "after the load of " + n + " keys");
    step("preload rate_limit_request (denying limit)", [&] { preload(o.params.deny_limit); });
    for (const std::string &sql : o.after_load) step(sql, [&] { tx.exec(sql); });
    step("VACUUM ANALYZE, CHECKPOINT", [&] {
        tx.exec(
            "VACUUM ANALYZE bench_update, bench_bucket, rate_limiting_token_bucket, rate_limit_state,"
            " rate_limit_state_unlogged");
        tx.exec("CHECKPOINT");
    });
}

// After a cell with a new key for every call: the rows those calls created go, so that the table and its
// indexes are back to the preloaded keys for the cells that follow (new keys have 19 digits, preloaded ones
// at most 5).
void remove_new_keys(pqxx::connection &admin) {
    pqxx::nontransaction tx(admin);
    compat::exec0(tx, "DELETE FROM rate_limit_state WHERE length(key) = 20");
    compat::exec0(tx, "DELETE FROM rate_limiting_token_bucket WHERE length(id) = 20");
    compat::exec0(tx, "VACUUM rate_limit_state, rate_limiting_token_bucket");
}

// Server settings are changed as an operator would (ALTER SYSTEM + reload); new backends must see the
// new value before the cell's connections are opened. An empty value resets the setting.
void set_server_setting(pqxx::connection &admin, const Options &o, const std::string &name, const std::string &value) {
    std::string want;
    {
        pqxx::nontransaction tx(admin);
        if (value.empty())
            tx.exec("ALTER SYSTEM RESET " + tx.quote_name(name));
        else
            tx.exec("ALTER SYSTEM SET " + tx.quote_name(name) + " = " + tx.quote(value));
        tx.exec("SELECT pg_reload_conf()");
        // What SHOW prints once the reload is seen (e.g. '0' for 0 bytes, the default for a reset).
        want = value.empty()
                   ? compat::exec1(tx, "SELECT boot_val FROM pg_settings WHERE name = " + tx.quote(name))[0].c_str()
                   : value;
    }
    for (int i = 0; i < 200; ++i) {
        pqxx::connection probe(o.params.conninfo);
        pqxx::nontransaction tx(probe);
        const pqxx::row row = compat::exec1(tx, "SELECT setting, current_setting(" + tx.quote(name) +
                                                    ") FROM pg_settings WHERE name = " + tx.quote(name));
        if (row[0].as<std::string>() == want || row[1].as<std::string>() == want) return;
        std::this_thread::sleep_for(std::chrono::milliseconds(25));
    }
    throw std::runtime_error(name + " did not change to " + (value.empty() ? "its default" : value) +
                             " after a reload");
}

std::pair<std::string, std::string> split_setting(const std::string &setting) {
    const auto eq = setting.find('=');
    return {setting.substr(0, eq), eq == std::string::npos ? "" : setting.substr(eq + 1)};
}

Meta collect_meta(pqxx::connection &admin, const Options &o, const std::string &redis_version) {
    Meta meta;
    meta.emplace_back("date", utc_now());
    meta.emplace_back("mode", o.mode);
    for (const auto &kv : o.extra_meta) meta.push_back(kv);
    utsname u{};
    uname(&u);
    std::string os;
    {
        std::ifstream in("/etc/os-release");
        std::string line;
        while (std::getline(in, line))
            if (line.rfind("PRETTY_NAME=", 0) == 0) os = line.substr(12);
        os.erase(std::remove(os.begin(), os.end(), '"'), os.end());
    }
    const std::string mem_kb = first_line_matching("/proc/meminfo", "MemTotal");
    char mem[64] = "";
    if (!mem_kb.empty()) std::snprintf(mem, sizeof(mem), "%.1f GiB", std::stod(mem_kb) / 1048576.0);
    meta.emplace_back("machine", first_line_matching("/proc/cpuinfo", "model name") + ", " +
                                     std::to_string(std::thread::hardware_concurrency()) + " cores, " + mem + ", " +
                                     os + ", Linux " + u.release);
    pqxx::nontransaction tx(admin);
    meta.emplace_back("postgresql", compat::exec1(tx, "SELECT version()")[0].as<std::string>());
    meta.emplace_back(
        "pg_ratelimit",
        compat::exec1(tx, "SELECT extversion FROM pg_extension WHERE extname = 'pg_ratelimit'")[0].as<std::string>());
    std::string settings;
    for (const char *name :
         {"shared_buffers", "fsync", "wal_sync_method", "max_wal_size", "checkpoint_timeout", "autovacuum"}) {
        settings += std::string(settings.empty() ? "" : ", ") + name + "=" +
                    compat::exec1(tx, std::string("SHOW ") + name)[0].as<std::string>();
    }
    meta.emplace_back("server settings", settings);
    meta.emplace_back("redis", o.redis.empty() ? "not measured" : redis_version + " (no persistence)");
    meta.emplace_back("client library", have_client_library()
                                            ? "pg_ratelimit::run_transaction (client/)"
                                            : "NOT BUILT: a local stand-in retry loop was used for SERIALIZABLE");
    for (const std::string &sql : o.after_load) meta.emplace_back("after the load", sql);
    std::ostringstream plan;
    plan << o.rounds << " rounds per cell, each run " << o.warmup << " s warm-up + " << o.seconds
         << " s measured, systems in rotating order; " << o.keys << " keys";
    meta.emplace_back("protocol", plan.str());
    return meta;
}

struct CellPlan {
    Cell cell;
    std::vector<System *> systems;
};

CellSummary run_cell(const CellPlan &plan, const Options &o, const std::vector<std::string> &keys, int index,
                     int total) {
    const Clock::time_point t0 = Clock::now();
    char head[160];
    std::snprintf(head, sizeof(head), "[%2d/%d] sync=%-3s %-7s %d client%s%s%s ", index, total,
                  plan.cell.sync_commit ? "on" : "off", dist_name(plan.cell.dist), plan.cell.clients,
                  plan.cell.clients == 1 ? " " : "s",
                  plan.cell.isolation == Isolation::serializable ? " SERIALIZABLE"
                  : plan.cell.batch                              ? " batches"
                                                                 : "",
                  plan.cell.setting.empty() ? "" : (" " + plan.cell.setting).c_str());
    std::cerr << head << std::flush;

    const std::size_t n = plan.systems.size();
    // Connections are opened once per cell and reused by every round, like an application's pool.
    std::vector<std::vector<std::unique_ptr<Worker>>> workers(n);
    for (std::size_t j = 0; j < n; ++j)
        for (int c = 0; c < plan.cell.clients; ++c) workers[j].push_back(plan.systems[j]->connect());

    std::vector<std::vector<RunResult>> rounds(static_cast<std::size_t>(o.rounds), std::vector<RunResult>(n));
    for (int r = 0; r < o.rounds; ++r) {
        // Rotate the order every round (and shift it per cell), so no system always runs first or last.
        for (std::size_t k = 0; k < n; ++k) {
            const std::size_t j = (k + static_cast<std::size_t>(r + index)) % n;
            rounds[static_cast<std::size_t>(r)][j] =
                run_timed(workers[j], keys, plan.cell.dist, o.warmup, o.seconds,
                          static_cast<std::uint64_t>(index) * 7919 + static_cast<std::uint64_t>(r) * 131 + j);
            std::cerr << '.' << std::flush;
        }
    }
    workers.clear();

    std::vector<std::string> ids, labels;
    std::vector<int> decisions;
    for (System *s : plan.systems) {
        ids.push_back(s->id());
        labels.push_back(s->label());
        decisions.push_back(s->decisions_per_call());
    }
    CellSummary summary = summarize(plan.cell, ids, labels, rounds, decisions);
    summary.wall_seconds = std::chrono::duration<double>(Clock::now() - t0).count();
    std::cerr << ' ';
    for (const auto &s : summary.systems) {
        std::cerr << ' ' << s.id << ' ' << short_rate(s.tps);
        if (s.total.errors) std::cerr << " (" << s.total.errors << " ERRORS)";
        if (s.total.retried_calls) std::cerr << " (" << s.total.retried_calls << " retried)";
    }
    char tail[32];
    std::snprintf(tail, sizeof(tail), "  [%.1f s]", summary.wall_seconds);
    std::cerr << tail << '\n';
    for (const auto &s : summary.systems)
        for (const auto &r : s.rounds)
            if (!r.first_error.empty()) {
                // The first line is enough for a progress line (the server's CONTEXT lines follow).
                std::cerr << "        first error of " << s.id << ": "
                          << r.first_error.substr(0, r.first_error.find('\n')) << '\n';
                break;
            }
    return summary;
}

int self_test() {
    int failures = 0;
    const auto check = [&](bool ok, const char *what) {
        if (!ok) {
            std::cerr << "FAILED: " << what << "\n";
            ++failures;
        }
    };
    std::vector<std::int64_t> v;
    for (int i = 1; i <= 1000; ++i) v.push_back(1001 - i);
    check(percentile(v, 0.5) == 500, "p50 of 1..1000 is 500");
    check(percentile(v, 0.99) == 990, "p99 of 1..1000 is 990");
    check(percentile(v, 0.999) == 999, "p99.9 of 1..1000 is 999");
    check(percentile(v, 1.0) == 1000, "p100 is the maximum");
    std::vector<std::int64_t> one{42};
    check(percentile(one, 0.999) == 42, "one sample");
    std::vector<std::int64_t> none;
    check(percentile(none, 0.5) == 0, "no samples");
    check(median({3, 1, 2}) == 2, "odd median");
    check(median({4, 1, 2, 3}) == 2.5, "even median");

    // Ratios pair the runs of one round: a system twice as fast as the reference in every round is 2x,
    // even though the rounds themselves drift by 10x.
    const auto run = [](double tps, std::int64_t latency_ns) {
        RunResult r;
        r.tps = tps;
        r.latencies_ns.assign(100, latency_ns);
        return r;
    };
    std::vector<std::vector<RunResult>> rounds{{run(100, 10000), run(50, 20000), run(200, 5000)},
                                               {run(1000, 10000), run(500, 20000), run(2000, 5000)},
                                               {run(10, 10000), run(5, 20000), run(20, 5000)}};
    rounds[0][2].latencies_ns.back() = 1000000;  // one slow call of 1000: the pooled p99.9 finds it
    const CellSummary c = summarize(Cell{}, {"select1", "seed", "ext"}, {"S", "seed", "ext"}, rounds);
    check(std::abs(c.systems[2].tps_vs_seed - 4) < 1e-9, "paired throughput ratio");
    check(std::abs(c.systems[2].p99_vs_select1 - 0.5) < 1e-9, "pooled latency ratio");
    check(std::abs(c.systems[2].p999_us - 1000) < 1e-9 && std::abs(c.systems[2].p999_vs_seed - 50) < 1e-9,
          "pooled p99.9 (rank 300 of 300)");
    check(std::abs(c.systems[1].tps - 50) < 1e-9, "median throughput");
    std::cerr << (failures ? "self-test failed\n" : "self-test passed\n");
    std::cout << (12 - failures) << " passed, " << failures << " failed\n";
    return failures ? 1 : 0;
}

int run(int argc, char **argv) {
    for (int i = 1; i < argc; ++i)
        if (std::string(argv[i]) == "--self-test") return self_test();
    const Options o = parse(argc, argv);
    std::filesystem::create_directories(o.out);

    std::vector<std::string> keys;
    keys.reserve(static_cast<std::size_t>(o.keys));
    for (int i = 0; i < o.keys; ++i) keys.push_back("k" + std::to_string(i));  // keys[0] is the hot key

    pqxx::connection admin(o.params.conninfo);
    Meta footprints;
    prepare_database(admin, o, footprints);

    std::string redis_sha, redis_ver;
    // GCRA with the same generosity as the SQL limits: 1 µs per unit (a million per second), a second of
    // burst; far above what 8 clients reach on one key, so every request is admitted and writes.
    constexpr long EMISSION_US = 1, BURST = 1000000;
    if (!o.redis.empty()) {
        step("Redis: SCRIPT LOAD gcra.lua, preload keys", [&] {
            redis_sha = redis_script_load(o.redis, read_file(o.source_dir + "/gcra.lua"));
            redis_preload(o.redis, redis_sha, keys, EMISSION_US, BURST);
            redis_ver = redis_version(o.redis);
        });
    }
    Meta meta = collect_meta(admin, o, redis_ver);
    meta.insert(meta.end(), footprints.begin(), footprints.end());

    std::vector<std::unique_ptr<System>> owned;
    std::vector<System *> plain, batch;
    for (const auto &id : o.serializable_only ? std::vector<std::string>{"select1"} : o.systems) {
        if (id.rfind("many_", 0) == 0) {
            owned.push_back(make_ext_many(o.params, id.substr(5), keys));
            batch.push_back(owned.back().get());
            continue;
        }
        if (id == "select1") owned.push_back(make_select1(o.params));
        if (id == "update") owned.push_back(make_update_floor(o.params));
        if (id == "upsert") owned.push_back(make_upsert(o.params));
        if (id == "seed") owned.push_back(make_seed(o.params));
        if (id == "ext") owned.push_back(make_ext(o.params));
        if (id == "ext_sql") owned.push_back(make_ext_sql(o.params));
        if (id == "ext_denied") owned.push_back(make_ext_denied(o.params));
        if (id == "ext_unlogged" || id == "ext_memory") owned.push_back(make_ext_storage(o.params, id.substr(4)));
        if (is_algorithm_system(id)) owned.push_back(make_ext_algorithm(o.params, id.substr(4)));
        if (id == "ext_record") owned.push_back(make_ext_record(o.params, "durable"));
        if (id == "ext_memory_record") owned.push_back(make_ext_record(o.params, "memory"));
        if (id == "ext_nostats") owned.push_back(make_ext_nostats(o.params, "durable"));
        if (id == "ext_memory_nostats") owned.push_back(make_ext_nostats(o.params, "memory"));
        if (id == "redis") owned.push_back(make_redis_gcra(o.redis, redis_sha, EMISSION_US, BURST));
        plain.push_back(owned.back().get());
    }
    // The SERIALIZABLE cells: the seed's function and the extension on both access paths, each through the
    // same retry helper; on the hot key also the library's example policy for hot keys, and limits with
    // hot-key shards.
    std::vector<System *> serializable, serializable_hot;
    if (o.serializable_clients > 0 && !o.serializable_dists.empty()) {
        // SELECT 1 (autocommit) stays in the cells as the round-trip reference.
        for (System *s : plain)
            if (s->id() == "select1") serializable.push_back(s);
        for (const auto &make : {make_seed_serializable, make_ext_serializable, make_ext_serializable_sql}) {
            owned.push_back(make(o.params));
            serializable.push_back(owned.back().get());
        }
        serializable_hot = serializable;
        owned.push_back(make_ext_serializable_patient(o.params));
        serializable_hot.push_back(owned.back().get());
        // Hot-key shards: the same calls on limits whose keys are split over 4 and 16 rows, against ext_ser's
        // one row (the target: 16 shards, 10x fewer retried calls and 3x the throughput of one).
        for (const int shards : {4, 16}) {
            owned.push_back(make_ext_serializable_shards(o.params, shards));
            serializable_hot.push_back(owned.back().get());
        }
    }
    if (o.serializable_only) plain.clear();
    bool sql_path = !serializable.empty();  // ext_ser_sql is in every SERIALIZABLE cell
    for (const System *s : plain) sql_path = sql_path || s->id() == "ext_sql";
    if (sql_path)
        step("checking that pg_ratelimit.access_path = sql takes the SQL path",
             [&] { check_access_paths(admin, o.params); });

    std::vector<std::pair<bool, std::vector<CellPlan>>> groups;  // per synchronous_commit setting
    int total = 0;
    for (bool sync : o.syncs) {
        std::vector<CellPlan> plans;
        if (!plain.empty())
            for (Dist d : o.dists)
                for (int c : o.clients) plans.push_back({Cell{sync, d, c, Isolation::autocommit, ""}, plain});
        if (!serializable.empty())
            for (Dist d : o.serializable_dists)
                plans.push_back({Cell{sync, d, o.serializable_clients, Isolation::serializable, ""},
                                 d == Dist::hot ? serializable_hot : serializable});
        // The batches beside the single calls of the run (Redis aside: it has no batch counterpart here).
        if (!batch.empty()) {
            std::vector<System *> systems;
            for (System *s : plain)
                if (s->id() != "redis") systems.push_back(s);
            systems.insert(systems.end(), batch.begin(), batch.end());
            plans.push_back({Cell{sync, Dist::uniform, o.batch_clients, Isolation::autocommit, "", true}, systems});
        }
        if (!sync && !o.extra_setting.empty() && !plain.empty())
            plans.push_back({Cell{sync, Dist::uniform, 2, Isolation::autocommit, o.extra_setting}, plain});
        total += static_cast<int>(plans.size());
        groups.emplace_back(sync, std::move(plans));
    }

    // Each system's first pass over its keys after the load's CHECKPOINT costs more than the steady
    // state (full-page images in the WAL, first pruning of every page, hint bits): pay it here,
    // unmeasured, rather than in whichever cells come first.
    // (Only SERIALIZABLE cells: their systems settle the same tables.)
    std::vector<System *> settlers = plain;
    if (settlers.empty())
        for (System *s : serializable)
            if (s->id() != "select1") settlers.push_back(s);
    if (o.settle > 0 && !settlers.empty())
        step("settling: every system " + std::to_string(o.settle).substr(0, 4) + " s on uniform keys, unmeasured", [&] {
            for (System *s : settlers) {
                std::vector<std::unique_ptr<Worker>> workers;
                workers.reserve(2);
                for (int c = 0; c < 2; ++c) workers.push_back(s->connect());
                (void)run_timed(workers, keys, Dist::uniform, 0, o.settle, 1);
            }
        });
    std::cerr << "measuring " << total << " cells: " << o.rounds << " rounds x (" << o.warmup << " s warm-up + "
              << o.seconds << " s) per system; one line per cell, '.' per run\n";
    std::vector<CellSummary> cells;
    int index = 0;
    for (auto &[sync, plans] : groups) {
        set_server_setting(admin, o, "synchronous_commit", sync ? "on" : "off");
        for (const CellPlan &plan : plans) {
            const auto [name, value] = split_setting(plan.cell.setting);
            if (!name.empty()) set_server_setting(admin, o, name, value);
            cells.push_back(run_cell(plan, o, keys, ++index, total));
            if (!name.empty()) set_server_setting(admin, o, name, "");
            if (plan.cell.dist == Dist::fresh) remove_new_keys(admin);
        }
    }
    set_server_setting(admin, o, "synchronous_commit", "");
    if (!footprints.empty()) {
        pqxx::nontransaction tx(admin);
        const Meta after = storage_footprint(tx, "after the run");
        meta.insert(meta.end(), after.begin(), after.end());
    }

    write_csv(o.out + "/results.csv", cells);
    write_json(o.out + "/results.json", meta, cells);
    write_markdown(o.out + "/report.md", meta, cells);
    write_plot_data(o.out + "/plot.tsv", cells);
    std::cerr << "\ntargets:\n";
    for (const auto &row : evaluate_targets(cells))
        std::cerr << "  [" << row.met << "] " << row.target << ": " << row.measured << "\n";
    std::cerr << "wrote " << o.out << "/{results.csv,results.json,report.md,plot.tsv}\n";
    return 0;
}

}  // namespace
}  // namespace bench

int main(int argc, char **argv) {
    try {
        return bench::run(argc, argv);
    } catch (const std::exception &e) {
        std::cerr << "pg_ratelimit_bench: " << e.what() << "\n";
        return 1;
    }
}
