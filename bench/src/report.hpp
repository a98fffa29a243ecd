// Summaries of a benchmark run and the files written from them: CSV, JSON, a Markdown report, and the
// data file bench/plot.gp turns into a PNG.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "bench.hpp"

namespace bench {

struct SystemSummary {
    std::string id, label;
    std::vector<RunResult> rounds;  // per-round figures (their latency samples are released)
    // Throughput: the median over the rounds. Latency percentiles: over all measured calls of all rounds
    // pooled (a tail percentile of one short run would rest on a handful of calls).
    double tps = 0, p50_us = 0, p99_us = 0, p999_us = 0;
    // Round-to-round spread of the throughput: (75th - 25th percentile of the rounds) / median.
    double tps_spread = 0;
    // Throughput ratios: the median over rounds of (this system / the reference in the same round), so
    // that drift between rounds cancels. Latency ratios: pooled percentile / the reference's pooled
    // percentile (both measured on the same interleaved schedule). NaN when the cell lacks the reference.
    double tps_vs_select1 = 0, tps_vs_seed = 0;
    double p50_vs_select1 = 0, p50_vs_seed = 0;
    double p99_vs_select1 = 0, p99_vs_seed = 0;
    double p999_vs_select1 = 0, p999_vs_seed = 0;
    Counters total;              // summed over the rounds
    int decisions_per_call = 1;  // keys per call of a batch system, 1 otherwise
    double decisions_per_s = 0;  // tps x decisions_per_call
};

struct CellSummary {
    Cell cell;
    std::vector<SystemSummary> systems;  // in the order the systems were listed
    double wall_seconds = 0;
};

// Ordered key/value pairs describing the run (machine, versions, options, command).
using Meta = std::vector<std::pair<std::string, std::string>>;

// rounds[i][j]: round i of systems[j] (ids and labels in `ids`/`labels`, decisions per call in `decisions`,
// all 1 when empty). Consumes the latency samples.
CellSummary summarize(const Cell &cell, const std::vector<std::string> &ids, const std::vector<std::string> &labels,
                      std::vector<std::vector<RunResult>> &rounds, const std::vector<int> &decisions = {});

std::string cell_title(const Cell &cell);

// The targets of the issue, evaluated on this run's figures (rows of "target | measured | met").
struct TargetRow {
    std::string target, measured, met;
};
std::vector<TargetRow> evaluate_targets(const std::vector<CellSummary> &cells);

void write_csv(const std::string &path, const std::vector<CellSummary> &cells);
void write_json(const std::string &path, const Meta &meta, const std::vector<CellSummary> &cells);
void write_markdown(const std::string &path, const Meta &meta, const std::vector<CellSummary> &cells);
void write_plot_data(const std::string &path, const std::vector<CellSummary> &cells);

}  // namespace bench
