#include "report.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <functional>
#include <limits>
#include <sstream>
#include <stdexcept>

namespace bench {
namespace {

constexpr double NaN = std::numeric_limits<double>::quiet_NaN();

const SystemSummary *find(const CellSummary &cell, const std::string &id) {
    for (const auto &s : cell.systems)
        if (s.id == id) return &s;
    return nullptr;
}

const CellSummary *find_cell(const std::vector<CellSummary> &cells, bool sync, Dist dist, int clients, Isolation iso,
                             const std::string &setting = "", bool batch = false) {
    for (const auto &c : cells)
        if (c.cell.sync_commit == sync && c.cell.dist == dist && c.cell.clients == clients && c.cell.isolation == iso &&
            c.cell.setting == setting && c.cell.batch == batch)
            return &c;
    return nullptr;
}

// The seed's function is the reference of its cell: as published in autocommit cells, and under
// SERIALIZABLE with the same retry helper in the SERIALIZABLE cells.
const char *seed_reference(const Cell &cell) { return cell.isolation == Isolation::serializable ? "seed_ser" : "seed"; }

// Median over rounds of metric(a) / metric(b), pairing the two systems' runs of the same round.
double paired_ratio(const SystemSummary &a, const SystemSummary *b, const std::function<double(const RunResult &)> &m) {
    if (b == nullptr) return NaN;
    std::vector<double> ratios;
    for (std::size_t i = 0; i < a.rounds.size() && i < b->rounds.size(); ++i) {
        const double denominator = m(b->rounds[i]);
        if (denominator > 0) ratios.push_back(m(a.rounds[i]) / denominator);
    }
    return ratios.empty() ? NaN : median(ratios);
}

std::string fixed(double v, int decimals) {
    if (std::isnan(v)) return "";
    char buf[64];
    std::snprintf(buf, sizeof(buf), "%.*f", decimals, v);
    return buf;
}

// 12345.6 -> "12,346"
std::string thousands(double v) {
    if (std::isnan(v)) return "—";
    std::string digits = std::to_string(static_cast<long long>(std::llround(v)));
    std::string out;
    const int n = static_cast<int>(digits.size());
    for (int i = 0; i < n; ++i) {
        out += digits[i];
        if (digits[i] != '-' && (n - i - 1) % 3 == 0 && i != n - 1) out += ',';
    }
    return out;
}

std::string micros(double us) {
    if (std::isnan(us)) return "—";
    if (us >= 1000) return thousands(us);
    return fixed(us, us >= 100 ? 0 : 1);
}

std::string ratio(double r) {
    if (std::isnan(r)) return "—";
    return fixed(r, r >= 10 ? 1 : 2);
}

std::string json_string(const std::string &s) {
    std::string out = "\"";
    for (unsigned char c : s) {
        switch (c) {
            case '"':
                out += "\\\"";
                break;
            case '\\':
                out += "\\\\";
                break;
            case '\n':
                out += "\\n";
                break;
            case '\t':
                out += "\\t";
                break;
            default:
                if (c < 0x20) {
                    char buf[8];
                    std::snprintf(buf, sizeof(buf), "\\u%04x", c);
                    out += buf;
                } else {
                    out += static_cast<char>(c);
                }
        }
    }
    return out + "\"";
}

std::string json_number(double v) {
    if (std::isnan(v) || std::isinf(v)) return "null";
    char buf[64];
    std::snprintf(buf, sizeof(buf), "%.6g", v);
    return buf;
}

std::ofstream open_out(const std::string &path) {
    std::ofstream out(path);
    if (!out) throw std::runtime_error("cannot write " + path);
    return out;
}

const char *sync_name(bool on) { return on ? "on" : "off"; }

const char *dist_title(Dist d) {
    switch (d) {
        case Dist::uniform:
            return "keys uniform over the key space";
        case Dist::hot:
            return "one hot key";
        case Dist::fresh:
            return "a new key for every call (each call creates its row)";
    }
    return "?";
}

// Calls that needed at least one retry, per 1,000 calls.
double retried_per_thousand(const Counters &t) {
    return t.calls == 0 ? NaN : 1000.0 * static_cast<double>(t.retried_calls) / static_cast<double>(t.calls);
}

}  // namespace

CellSummary summarize(const Cell &cell, const std::vector<std::string> &ids, const std::vector<std::string> &labels,
                      std::vector<std::vector<RunResult>> &rounds, const std::vector<int> &decisions) {
    CellSummary summary;
    summary.cell = cell;
    for (std::size_t j = 0; j < ids.size(); ++j) {
        SystemSummary s;
        s.id = ids[j];
        s.label = labels[j];
        s.decisions_per_call = j < decisions.size() ? decisions[j] : 1;
        std::vector<double> tps;
        std::vector<std::int64_t> pooled;
        for (auto &round : rounds) {
            RunResult &r = round[j];
            pooled.insert(pooled.end(), r.latencies_ns.begin(), r.latencies_ns.end());
            std::vector<std::int64_t>().swap(r.latencies_ns);
            s.rounds.push_back(r);
            s.total += r.counters;
            tps.push_back(r.tps);
        }
        s.tps = median(tps);
        s.decisions_per_s = s.tps * s.decisions_per_call;
        if (s.tps > 0 && tps.size() >= 2) {
            std::sort(tps.begin(), tps.end());
            const auto at = [&](double q) { return tps[static_cast<std::size_t>(std::lround(q * (tps.size() - 1)))]; };
            s.tps_spread = (at(0.75) - at(0.25)) / s.tps;
        }
        s.p50_us = percentile(pooled, 0.50) / 1000;
        s.p99_us = percentile(pooled, 0.99) / 1000;
        s.p999_us = percentile(pooled, 0.999) / 1000;
        summary.systems.push_back(std::move(s));
    }
    // Copies, since the loop below writes into summary.systems.
    const SystemSummary *found_s1 = find(summary, "select1");
    const SystemSummary *found_seed = find(summary, seed_reference(cell));
    const SystemSummary select1 = found_s1 ? *found_s1 : SystemSummary{};
    const SystemSummary seed = found_seed ? *found_seed : SystemSummary{};
    const SystemSummary *s1 = found_s1 ? &select1 : nullptr;
    const SystemSummary *sd = found_seed ? &seed : nullptr;
    const auto over = [](double a, const SystemSummary *ref, double SystemSummary::*field) {
        return ref == nullptr || ref->*field <= 0 ? NaN : a / (ref->*field);
    };
    for (auto &s : summary.systems) {
        s.tps_vs_select1 = paired_ratio(s, s1, [](const RunResult &r) { return r.tps; });
        s.tps_vs_seed = paired_ratio(s, sd, [](const RunResult &r) { return r.tps; });
        s.p50_vs_select1 = over(s.p50_us, s1, &SystemSummary::p50_us);
        s.p50_vs_seed = over(s.p50_us, sd, &SystemSummary::p50_us);
        s.p99_vs_select1 = over(s.p99_us, s1, &SystemSummary::p99_us);
        s.p99_vs_seed = over(s.p99_us, sd, &SystemSummary::p99_us);
        s.p999_vs_select1 = over(s.p999_us, s1, &SystemSummary::p999_us);
        s.p999_vs_seed = over(s.p999_us, sd, &SystemSummary::p999_us);
    }
    return summary;
}

std::string cell_title(const Cell &cell) {
    std::ostringstream out;
    out << "synchronous_commit=" << sync_name(cell.sync_commit) << ", " << dist_name(cell.dist) << " keys, "
        << cell.clients << (cell.clients == 1 ? " client" : " clients");
    if (cell.isolation == Isolation::serializable) out << ", SERIALIZABLE";
    if (!cell.setting.empty()) out << ", " << cell.setting;
    if (cell.batch) out << ", batches beside single calls";
    return out.str();
}

namespace {

std::string yes_no(bool ok) { return ok ? "yes" : "**no**"; }

// A system's throughput against the seed's in the same cell, at least `least` times (1.5 for the durable path).
TargetRow seed_ratio_row(const std::string &target, const SystemSummary &system, const CellSummary &cell,
                         double least = 1.5) {
    return {target,
            ratio(system.tps_vs_seed) + "× (" + thousands(system.tps) + " vs " + thousands(find(cell, "seed")->tps) +
                " tps)",
            yes_no(system.tps_vs_seed >= least)};
}

// What the retry helper did for one system in a SERIALIZABLE cell.
std::string retry_figures(const SystemSummary &s) {
    const Counters &t = s.total;
    std::ostringstream out;
    out << fixed(retried_per_thousand(t), 2) << " retried calls per 1,000 ("
        << thousands(static_cast<double>(t.retried_calls)) << " of " << thousands(static_cast<double>(t.calls))
        << " calls), " << thousands(static_cast<double>(t.serialization_failures)) << " × 40001, " << t.errors
        << " errors to the application; " << thousands(s.tps) << " calls/s, p99 " << micros(s.p99_us) << " µs";
    return out.str();
}

// Issue 10's targets for the storage modes and batches, where the run measured them (bench/run.sh
// --storage-modes): 2 clients, uniform keys; the batch cells at their clients (1).
void storage_mode_targets(const std::vector<CellSummary> &cells, std::vector<TargetRow> &rows) {
    const auto tps = [](const RunResult &x) { return x.tps; };
    for (const bool sync : {false, true}) {
        const std::string where = std::string(", 2 clients, uniform, sync ") + sync_name(sync);
        const CellSummary *c = find_cell(cells, sync, Dist::uniform, 2, Isolation::autocommit);
        const SystemSummary *memory = c ? find(*c, "ext_memory") : nullptr;
        const SystemSummary *select1 = c ? find(*c, "select1") : nullptr;
        if (memory != nullptr && select1 != nullptr) {
            rows.push_back({"memory ≥ 0.8× `SELECT 1`" + where,
                            ratio(memory->tps_vs_select1) + "× (" + thousands(memory->tps) + " vs " +
                                thousands(select1->tps) + " tps)",
                            sync ? "reported" : yes_no(memory->tps_vs_select1 >= 0.8)});
            if (const SystemSummary *scalar = find(*c, "ext_memory_record"))
                rows.push_back({"memory as a scalar (`SELECT rate_limit_request($1, $2)`) ≥ 0.8× `SELECT 1`" + where,
                                ratio(scalar->tps_vs_select1) + "× (" + thousands(scalar->tps) + " vs " +
                                    thousands(select1->tps) + " tps)",
                                sync ? "reported" : yes_no(scalar->tps_vs_select1 >= 0.8)});
            for (const char *id : {"ext", "ext_unlogged"})
                if (const SystemSummary *s = find(*c, id))
                    rows.push_back(
                        {std::string("(") + (s->id == "ext" ? "durable" : "unlogged") + " ÷ `SELECT 1`" + where + ")",
                         ratio(s->tps_vs_select1) + "× (" + thousands(s->tps) + " tps)", "reported"});
        }
        const SystemSummary *redis = c ? find(*c, "redis") : nullptr;
        if (memory != nullptr && redis != nullptr) {
            const double r = paired_ratio(*memory, redis, tps);
            rows.push_back({"memory ≥ 2× the Redis GCRA script" + where,
                            ratio(r) + "× (" + thousands(memory->tps) + " vs " + thousands(redis->tps) + " tps)",
                            sync ? "reported" : yes_no(r >= 2.0)});
        }
        const SystemSummary *durable = c ? find(*c, "ext") : nullptr;
        const SystemSummary *unlogged = c ? find(*c, "ext_unlogged") : nullptr;
        if (durable != nullptr && unlogged != nullptr) {
            const double r = paired_ratio(*unlogged, durable, tps);
            rows.push_back({"unlogged ≥ 2× durable" + where,
                            ratio(r) + "× (" + thousands(unlogged->tps) + " vs " + thousands(durable->tps) + " tps)",
                            sync ? yes_no(r >= 2.0) : "reported"});
        }
        for (const auto &b : cells) {
            if (!b.cell.batch || b.cell.sync_commit != sync) continue;
            const std::string at = ", " + std::to_string(b.cell.clients) +
                                   (b.cell.clients == 1 ? " client" : " clients") + ", sync " + sync_name(sync);
            if (const SystemSummary *many = find(b, "many_memory"))
                rows.push_back({"memory batches ≥ 1,000,000 decisions/s" + at,
                                thousands(many->decisions_per_s) + " decisions/s (" + thousands(many->tps) +
                                    " calls/s × " + thousands(many->decisions_per_call) + ")",
                                sync ? "reported" : yes_no(many->decisions_per_s >= 1e6)});
            const SystemSummary *single = find(b, "ext");
            for (const char *id : {"many_durable", "many_unlogged"}) {
                const SystemSummary *many = find(b, id);
                if (many == nullptr || single == nullptr) continue;
                const double r = paired_ratio(*many, single, tps) * many->decisions_per_call;
                const bool is_durable = many->id == "many_durable";
                rows.push_back({std::string(is_durable ? "durable" : "(unlogged)") +
                                    " batches ≥ 5× the decisions/s of single durable calls" + at,
                                ratio(r) + "× (" + thousands(many->decisions_per_s) + " vs " + thousands(single->tps) +
                                    " decisions/s)",
                                is_durable && !sync ? yes_no(r >= 5.0) : "reported"});
            }
        }
    }
}

// The target for the other algorithms, where the run measured them (bench/run.sh --algorithms): in
// the default cell (2 clients, uniform keys, sync off), each within 10% of the token bucket's throughput
// (rate_limit_request on 'bench'), paired by round; their ratio to SELECT 1 beside it.
void algorithm_targets(const std::vector<CellSummary> &cells, std::vector<TargetRow> &rows) {
    const CellSummary *c = find_cell(cells, false, Dist::uniform, 2, Isolation::autocommit);
    const SystemSummary *bucket = c ? find(*c, "ext") : nullptr;
    if (bucket == nullptr) return;
    for (const char *algorithm : OTHER_ALGORITHMS) {
        const SystemSummary *s = find(*c, std::string("ext_") + algorithm);
        if (s == nullptr) continue;
        const double r = paired_ratio(*s, bucket, [](const RunResult &x) { return x.tps; });
        rows.push_back({std::string(algorithm) + " ≥ 0.9× the token bucket (2 clients, uniform, sync off)",
                        ratio(r) + "× (" + thousands(s->tps) + " vs " + thousands(bucket->tps) + " tps; " +
                            ratio(s->tps_vs_select1) + "× `SELECT 1`, the token bucket " +
                            ratio(bucket->tps_vs_select1) + "×)",
                        yes_no(r >= 0.9)});
    }
}

}  // namespace

std::vector<TargetRow> evaluate_targets(const std::vector<CellSummary> &cells) {
    std::vector<TargetRow> rows;

    const CellSummary *c2 = find_cell(cells, false, Dist::uniform, 2, Isolation::autocommit);
    const SystemSummary *ext2 = c2 ? find(*c2, "ext") : nullptr;
    if (ext2 != nullptr && !std::isnan(ext2->tps_vs_seed)) {
        rows.push_back(seed_ratio_row("Durable table path ≥ 1.5× the seed's throughput (2 clients, uniform, sync off)",
                                      *ext2, *c2));
        // The seed's function is called as a scalar; in that form, too, the extension skips the
        // FunctionScan and tuplestore that SELECT * FROM costs every function.
        const SystemSummary *scalar = find(*c2, "ext_record");
        if (scalar != nullptr && !std::isnan(scalar->tps_vs_seed))
            rows.push_back(seed_ratio_row("(same target, in the seed's call form: SELECT rate_limit_request($1, $2))",
                                          *scalar, *c2));
        // The SQL path (YugabyteDB, non-heap tables): no slower than the seed's PL/pgSQL, and how far behind the
        // direct path it is, paired round by round like every ratio.
        const SystemSummary *sql = find(*c2, "ext_sql");
        if (sql != nullptr && !std::isnan(sql->tps_vs_seed)) {
            rows.push_back(
                seed_ratio_row("SQL path ≥ 1.0× the seed's throughput (2 clients, uniform, sync off)", *sql, *c2, 1.0));
            const double r = paired_ratio(*sql, ext2, [](const RunResult &x) { return x.tps; });
            rows.push_back({"(SQL path ÷ direct path, same cell)",
                            ratio(r) + "× (" + thousands(sql->tps) + " vs " + thousands(ext2->tps) + " tps)",
                            "reported"});
        }
        const SystemSummary *redis = find(*c2, "redis");
        if (redis != nullptr) {
            const double r = paired_ratio(*ext2, redis, [](const RunResult &x) { return x.tps; });
            rows.push_back({"Aim: at or above the Redis GCRA script (same cell)",
                            ratio(r) + "× (" + thousands(ext2->tps) + " vs " + thousands(redis->tps) + " tps)",
                            yes_no(r >= 1.0)});
        }
    }
    for (const auto &c : cells) {
        if (c.cell.setting.empty() || c.cell.isolation != Isolation::autocommit) continue;
        const SystemSummary *ext = find(c, "ext");
        if (ext == nullptr || std::isnan(ext->tps_vs_seed)) continue;
        rows.push_back(seed_ratio_row("(same target, server setting " + c.cell.setting + ") ≥ 1.5× the seed, " +
                                          std::to_string(c.cell.clients) + " clients, uniform, sync off",
                                      *ext, c));
    }
    const CellSummary *c1 = find_cell(cells, false, Dist::uniform, 1, Isolation::autocommit);
    const SystemSummary *ext1 = c1 ? find(*c1, "ext") : nullptr;
    if (ext1 != nullptr && !std::isnan(ext1->p99_vs_select1)) {
        rows.push_back({"p99 at 1 client ≤ 2× that of SELECT 1 (uniform, sync off)",
                        ratio(ext1->p99_vs_select1) + "× (" + micros(ext1->p99_us) + " vs " +
                            micros(find(*c1, "select1")->p99_us) + " µs)",
                        yes_no(ext1->p99_vs_select1 <= 2.0)});
    }
    // No false conflicts between unrelated keys: with every call on its own key, a retry is a predicate lock
    // coarser than the row (an index page, a heap page, the relation).
    for (const auto &c : cells) {
        if (c.cell.isolation != Isolation::serializable || c.cell.dist == Dist::hot) continue;
        for (const char *id : {"ext_ser", "ext_ser_sql"}) {
            const SystemSummary *ext = find(c, id);
            if (ext == nullptr) continue;
            const std::string path = std::string(id) == "ext_ser" ? "direct path" : "SQL path";
            const std::string where = "SERIALIZABLE, " + std::to_string(c.cell.clients) + " clients, sync " +
                                      sync_name(c.cell.sync_commit) + ", " + path;
            if (c.cell.dist == Dist::uniform)
                rows.push_back({where + ", uniform keys over the preloaded keys: fewer than 1 retried call per 1,000",
                                retry_figures(*ext), yes_no(retried_per_thousand(ext->total) < 1.0)});
            else
                rows.push_back({where + ", a new key for every call: retried calls", retry_figures(*ext), "reported"});
        }
    }
    for (const auto &c : cells) {
        if (c.cell.isolation != Isolation::serializable || c.cell.dist != Dist::hot) continue;
        const std::string where = "Hot key, SERIALIZABLE, " + std::to_string(c.cell.clients) + " clients, sync " +
                                  sync_name(c.cell.sync_commit) + ", client library";
        for (const char *id : {"ext_ser", "ext_ser_patient", "ext_ser_shards4", "ext_ser_shards16"}) {
            const SystemSummary *ext = find(c, id);
            if (ext == nullptr) continue;
            const std::string which = std::string(id) == "ext_ser"           ? "default RetryPolicy"
                                      : std::string(id) == "ext_ser_patient" ? "max_attempts=100, max_elapsed=30 s"
                                      : std::string(id) == "ext_ser_shards4" ? "shards => 4"
                                                                             : "shards => 16";
            std::string target = where;
            target.append(" (").append(which).append("): no error reaches the application");
            rows.push_back({target, retry_figures(*ext), yes_no(ext->total.errors == 0)});
        }
        // Hot-key shards against the one-row key of the same cell, same retry helper and policy.
        const SystemSummary *one = find(c, "ext_ser");
        for (const int shards : {4, 16}) {
            const SystemSummary *many = find(c, "ext_ser_shards" + std::to_string(shards));
            if (one == nullptr || many == nullptr) continue;
            const double fewer = retried_per_thousand(one->total) / retried_per_thousand(many->total);
            const double faster = paired_ratio(*many, one, [](const RunResult &x) { return x.tps; });
            std::ostringstream measured;
            measured << (std::isinf(fewer) ? std::string("∞") : ratio(fewer)) << "× fewer retried calls ("
                     << fixed(retried_per_thousand(many->total), 2) << " vs "
                     << fixed(retried_per_thousand(one->total), 2) << " per 1,000); " << ratio(faster)
                     << "× the throughput (" << thousands(many->tps) << " vs " << thousands(one->tps)
                     << " calls/s); p99 " << micros(many->p99_us) << " vs " << micros(one->p99_us) << " µs";
            if (shards == 16)
                rows.push_back({where + ", shards => 16 vs one row: ≥ 10× fewer retried calls and ≥ 3× the throughput",
                                measured.str(),
                                yes_no(fewer >= 10) + " (retries), " + yes_no(faster >= 3) + " (throughput)"});
            else
                rows.push_back({where + ", shards => 4 vs one row", measured.str(), "reported"});
        }
    }
    storage_mode_targets(cells, rows);
    algorithm_targets(cells, rows);
    return rows;
}

void write_csv(const std::string &path, const std::vector<CellSummary> &cells) {
    std::ofstream out = open_out(path);
    out << "synchronous_commit,keys,clients,isolation,setting,system,label,rounds,tps,tps_spread,p50_us,p99_us,p999_us,"
           "tps_vs_select1,tps_vs_seed,p50_vs_select1,p50_vs_seed,p99_vs_select1,p99_vs_seed,p999_vs_select1,"
           "p999_vs_seed,calls,denied,errors,retries,serialization_failures,deadlocks,retried_calls,exhausted,batch_"
           "cell,"
           "decisions_per_call,decisions_per_s\n";
    for (const auto &c : cells)
        for (const auto &s : c.systems) {
            const Counters &t = s.total;
            out << sync_name(c.cell.sync_commit) << ',' << dist_name(c.cell.dist) << ',' << c.cell.clients << ','
                << (c.cell.isolation == Isolation::serializable ? "serializable" : "autocommit") << ",\""
                << c.cell.setting << "\"," << s.id << ",\"" << s.label << "\"," << s.rounds.size() << ','
                << fixed(s.tps, 1) << ',' << fixed(s.tps_spread, 3) << ',' << fixed(s.p50_us, 1) << ','
                << fixed(s.p99_us, 1) << ',' << fixed(s.p999_us, 1) << ',' << fixed(s.tps_vs_select1, 4) << ','
                << fixed(s.tps_vs_seed, 4) << ',' << fixed(s.p50_vs_select1, 4) << ',' << fixed(s.p50_vs_seed, 4) << ','
                << fixed(s.p99_vs_select1, 4) << ',' << fixed(s.p99_vs_seed, 4) << ',' << fixed(s.p999_vs_select1, 4)
                << ',' << fixed(s.p999_vs_seed, 4) << ',' << t.calls << ',' << t.denied << ',' << t.errors << ','
                << t.retries << ',' << t.serialization_failures << ',' << t.deadlocks << ',' << t.retried_calls << ','
                << t.exhausted << ',' << (c.cell.batch ? 1 : 0) << ',' << s.decisions_per_call << ','
                << fixed(s.decisions_per_s, 1) << '\n';
        }
}

void write_json(const std::string &path, const Meta &meta, const std::vector<CellSummary> &cells) {
    std::ofstream out = open_out(path);
    out << "{\n  \"meta\": {";
    for (std::size_t i = 0; i < meta.size(); ++i)
        out << (i ? "," : "") << "\n    " << json_string(meta[i].first) << ": " << json_string(meta[i].second);
    out << "\n  },\n  \"cells\": [";
    for (std::size_t ci = 0; ci < cells.size(); ++ci) {
        const CellSummary &c = cells[ci];
        out << (ci ? "," : "") << "\n    {\"synchronous_commit\": " << json_string(sync_name(c.cell.sync_commit))
            << ", \"keys\": " << json_string(dist_name(c.cell.dist)) << ", \"clients\": " << c.cell.clients
            << ", \"isolation\": "
            << json_string(c.cell.isolation == Isolation::serializable ? "serializable" : "autocommit")
            << ", \"setting\": " << json_string(c.cell.setting)
            << ", \"batch_cell\": " << (c.cell.batch ? "true" : "false")
            << ", \"wall_seconds\": " << json_number(c.wall_seconds) << ",\n     \"systems\": [";
        for (std::size_t si = 0; si < c.systems.size(); ++si) {
            const SystemSummary &s = c.systems[si];
            const Counters &t = s.total;
            out << (si ? "," : "") << "\n      {\"system\": " << json_string(s.id)
                << ", \"label\": " << json_string(s.label) << ", \"tps\": " << json_number(s.tps)
                << ", \"decisions_per_call\": " << s.decisions_per_call
                << ", \"decisions_per_s\": " << json_number(s.decisions_per_s)
                << ", \"tps_spread\": " << json_number(s.tps_spread) << ", \"p50_us\": " << json_number(s.p50_us)
                << ", \"p99_us\": " << json_number(s.p99_us) << ", \"p999_us\": " << json_number(s.p999_us)
                << ",\n       \"ratios\": {\"tps_vs_select1\": " << json_number(s.tps_vs_select1)
                << ", \"tps_vs_seed\": " << json_number(s.tps_vs_seed)
                << ", \"p50_vs_select1\": " << json_number(s.p50_vs_select1)
                << ", \"p50_vs_seed\": " << json_number(s.p50_vs_seed)
                << ", \"p99_vs_select1\": " << json_number(s.p99_vs_select1)
                << ", \"p99_vs_seed\": " << json_number(s.p99_vs_seed)
                << ", \"p999_vs_select1\": " << json_number(s.p999_vs_select1)
                << ", \"p999_vs_seed\": " << json_number(s.p999_vs_seed)
                << "},\n       \"counters\": {\"calls\": " << t.calls << ", \"denied\": " << t.denied
                << ", \"errors\": " << t.errors << ", \"retries\": " << t.retries
                << ", \"serialization_failures\": " << t.serialization_failures << ", \"deadlocks\": " << t.deadlocks
                << ", \"retried_calls\": " << t.retried_calls << ", \"exhausted\": " << t.exhausted
                << "},\n       \"rounds\": [";
            for (std::size_t ri = 0; ri < s.rounds.size(); ++ri) {
                const RunResult &r = s.rounds[ri];
                out << (ri ? ", " : "") << "{\"tps\": " << json_number(r.tps)
                    << ", \"p50_us\": " << json_number(r.p50_us) << ", \"p99_us\": " << json_number(r.p99_us)
                    << ", \"p999_us\": " << json_number(r.p999_us) << ", \"max_us\": " << json_number(r.max_us)
                    << ", \"calls\": " << r.counters.calls << ", \"errors\": " << r.counters.errors << "}";
            }
            out << "]}";
        }
        out << "\n     ]}";
    }
    out << "\n  ]\n}\n";
}

void write_markdown(const std::string &path, const Meta &meta, const std::vector<CellSummary> &cells) {
    std::ofstream out = open_out(path);
    out << "# pg_ratelimit benchmark run\n\n";
    for (const auto &[key, value] : meta) out << "- **" << key << "**: " << value << "\n";

    out << "\n## Targets\n\n| target | measured | met |\n|---|---|---|\n";
    for (const auto &row : evaluate_targets(cells))
        out << "| " << row.target << " | " << row.measured << " | " << row.met << " |\n";

    out << "\n## Results\n\n"
           "tps: calls per second, all clients together, the median over the rounds. p50/p99/p99.9: latency of "
           "one call as the client sees it, in microseconds, over all calls of all rounds. ÷S1 and ÷seed: the "
           "figure divided by that of `SELECT 1` and of the seed's PL/pgSQL function in the same cell (for tps, "
           "the median of the per-round ratios; under SERIALIZABLE the seed's function runs the same way, with "
           "the same retry helper). Throughput ratios above 1 and latency ratios below 1 beat the reference.\n";
    // One table per (synchronous_commit, keys, isolation), rows grouped by clients.
    struct Group {
        bool sync;
        Dist dist;
        Isolation iso;
        std::string setting;
        bool batch;
        bool has(const Cell &c) const {
            return sync == c.sync_commit && dist == c.dist && iso == c.isolation && setting == c.setting &&
                   batch == c.batch;
        }
    };
    std::vector<Group> groups;
    for (const auto &c : cells) {
        bool seen = false;
        for (const auto &g : groups) seen = seen || g.has(c.cell);
        if (!seen) groups.push_back({c.cell.sync_commit, c.cell.dist, c.cell.isolation, c.cell.setting, c.cell.batch});
    }
    for (const auto &g : groups) {
        out << "\n### synchronous_commit=" << sync_name(g.sync) << ", " << dist_title(g.dist)
            << (g.iso == Isolation::serializable ? ", each call a SERIALIZABLE transaction with retries" : "")
            << (g.setting.empty() ? "" : ", server setting " + g.setting)
            << (g.batch ? ", batches (rate_limit_request_many) beside single calls" : "") << "\n\n";
        const bool ser = g.iso == Isolation::serializable;
        // Batches: calls per second and decisions per second (calls x keys per call).
        const bool dec = g.batch;
        out << "| clients | system | tps |" << (dec ? " decisions/s |" : "")
            << " ÷S1 | ÷seed | p50 µs | ÷S1 | ÷seed | p99 µs | ÷S1 | ÷seed | p99.9 µs | ÷S1 | ÷seed |"
            << (ser ? " calls | retried calls | retried per 1,000 | retries | 40001 | errors to app |" : "") << "\n";
        out << "|--:|---|--:|" << (dec ? "--:|" : "") << "--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|"
            << (ser ? "--:|--:|--:|--:|--:|--:|" : "") << "\n";
        std::vector<std::string> notes;
        for (const auto &c : cells) {
            if (!g.has(c.cell)) continue;
            for (const auto &s : c.systems) {
                out << "| " << c.cell.clients << " | " << s.label << " | " << thousands(s.tps) << " | "
                    << (dec ? thousands(s.decisions_per_s) + " | " : "") << ratio(s.tps_vs_select1) << " | "
                    << ratio(s.tps_vs_seed) << " | " << micros(s.p50_us) << " | " << ratio(s.p50_vs_select1) << " | "
                    << ratio(s.p50_vs_seed) << " | " << micros(s.p99_us) << " | " << ratio(s.p99_vs_select1) << " | "
                    << ratio(s.p99_vs_seed) << " | " << micros(s.p999_us) << " | " << ratio(s.p999_vs_select1) << " | "
                    << ratio(s.p999_vs_seed) << " |";
                const Counters &t = s.total;
                if (ser)
                    out << " " << thousands(static_cast<double>(t.calls)) << " | "
                        << thousands(static_cast<double>(t.retried_calls)) << " | " << fixed(retried_per_thousand(t), 2)
                        << " | " << thousands(static_cast<double>(t.retries)) << " | "
                        << thousands(static_cast<double>(t.serialization_failures)) << " | " << t.errors << " |";
                out << "\n";
                if (!ser && t.errors > 0)
                    notes.push_back(std::to_string(c.cell.clients) + " clients, " + s.label + ": " +
                                    std::to_string(t.errors) + " errors");
                const bool expect_denied = s.id == "ext_denied";
                const bool admission_checked = s.id != "select1" && s.id != "update";
                if (admission_checked && t.calls > 0 && (expect_denied ? t.denied != t.calls : t.denied > 0))
                    notes.push_back(std::to_string(c.cell.clients) + " clients, " + s.label + ": " +
                                    std::to_string(t.denied) + " of " + std::to_string(t.calls) + " calls denied");
            }
        }
        std::string spread;
        for (const auto &c : cells) {
            if (!g.has(c.cell)) continue;
            if (const SystemSummary *s1 = find(c, "select1"))
                spread += std::string(spread.empty() ? "" : ", ") + std::to_string(c.cell.clients) + " clients " +
                          fixed(100 * s1->tps_spread, 0) + "%";
        }
        if (!spread.empty())
            out << "\nNoise: round-to-round spread of SELECT 1 throughput (interquartile range / median): " << spread
                << ".\n";
        for (const auto &n : notes) out << "\n- ⚠ " << n;
        if (!notes.empty()) out << "\n";
    }
}

void write_plot_data(const std::string &path, const std::vector<CellSummary> &cells) {
    std::ofstream out = open_out(path);
    // Rows of one (panel, system) series are contiguous and ordered by clients, so gnuplot draws each
    // series as one line. decisions_per_s is what the plot shows: tps, times the keys per call of a batch.
    out << "# panel\tsystem\tclients\ttps\tp50_us\tp99_us\tp999_us\tdecisions_per_s\n";
    std::vector<std::string> panels, systems;
    const auto add = [](std::vector<std::string> &v, const std::string &x) {
        for (const auto &y : v)
            if (y == x) return;
        v.push_back(x);
    };
    const auto panel_of = [](const Cell &c) { return std::string(sync_name(c.sync_commit)) + "-" + dist_name(c.dist); };
    for (const auto &c : cells) {
        if (c.cell.isolation != Isolation::autocommit || !c.cell.setting.empty()) continue;
        add(panels, panel_of(c.cell));
        for (const auto &s : c.systems) add(systems, s.id);
    }
    for (const auto &panel : panels)
        for (const auto &system : systems) {
            // A batch cell's figures join a series at its client count unless a cell of the main matrix
            // measured that point.
            std::vector<std::pair<int, const SystemSummary *>> points;
            for (const bool batch : {false, true})
                for (const auto &c : cells) {
                    if (c.cell.isolation != Isolation::autocommit || !c.cell.setting.empty()) continue;
                    if (c.cell.batch != batch || panel_of(c.cell) != panel) continue;
                    const SystemSummary *s = find(c, system);
                    const bool taken = std::any_of(points.begin(), points.end(),
                                                   [&](const auto &p) { return p.first == c.cell.clients; });
                    if (s != nullptr && !taken) points.emplace_back(c.cell.clients, s);
                }
            std::stable_sort(points.begin(), points.end(),
                             [](const auto &a, const auto &b) { return a.first < b.first; });
            for (const auto &[clients, s] : points)
                out << panel << '\t' << system << '\t' << clients << '\t' << fixed(s->tps, 1) << '\t'
                    << fixed(s->p50_us, 1) << '\t' << fixed(s->p99_us, 1) << '\t' << fixed(s->p999_us, 1) << '\t'
                    << fixed(s->decisions_per_s, 1) << '\n';
        }
}

}  // namespace bench
