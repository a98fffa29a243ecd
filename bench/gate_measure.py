#!/usr/bin/env python3
"""The measuring half of bench/gate.sh: wrk through each cell, interleaved in rounds (every cell once per
round, so that a noisy moment of the shared machine lands on one round of every cell rather than on all of
one cell's runs), the median of the rounds reported. With the throughput and wrk's p50 and p99, the CPU
time each request cost the proxy's processes and PostgreSQL's (from /proc/PID/stat: user + system time of
the process and its children, over the run, divided by the requests).

  gate_measure.py --duration S --rounds R --out DIR --lua FILE --postmaster PID CELL...
  CELL: name=port=pid   (pid: the proxy's process, its children counted too; 0 for none)
"""
import argparse
import csv
import os
import re
import statistics
import subprocess

TICK = os.sysconf("SC_CLK_TCK")


def children(pid):
    out = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as f:
                    fields = f.read().rsplit(")", 1)[1].split()
                if int(fields[1]) == pid:
                    out.append(int(entry))
            except OSError:
                pass
    return out


def cpu_seconds(pids):
    total = 0
    for pid in pids:
        try:
            with open(f"/proc/{pid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            total += int(fields[11]) + int(fields[12])  # utime, stime (fields 14 and 15 of stat)
        except OSError:
            pass
    return total / TICK


def micros(text):
    value = float(re.match(r"[\d.]+", text).group(0))
    if text.endswith("us"):
        return value
    if text.endswith("ms"):
        return value * 1000
    if text.endswith("s"):
        return value * 1e6
    return value


def wrk(port, connections, seconds, lua):
    out = subprocess.run(["wrk", "-t2", f"-c{connections}", f"-d{seconds}s", "--latency", "-s", lua,
                          f"http://127.0.0.1:{port}/hello"], capture_output=True, text=True, check=True).stdout
    requests = int(re.search(r"(\d+) requests in", out).group(1))
    rps = float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1))
    p50 = micros(re.search(r"^\s+50%\s+(\S+)", out, re.M).group(1))
    p99 = micros(re.search(r"^\s+99%\s+(\S+)", out, re.M).group(1))
    bad = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
    return requests, rps, p50, p99, int(bad.group(1)) if bad else 0, out


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--duration", type=int, default=5)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--out", required=True)
    parser.add_argument("--lua", required=True)
    parser.add_argument("--postmaster", type=int, required=True)
    parser.add_argument("cells", nargs="+")
    args = parser.parse_args()
    cells = []
    for spec in args.cells:
        name, port, pid = spec.split("=")
        cells.append((name, int(port), int(pid)))
    runs = {}
    for round_number in range(1, args.rounds + 1):
        for connections in (2, 32):
            for name, port, pid in cells:
                wrk(port, connections, 1, args.lua)  # warm-up: connections made, caches filled
                proxy = [pid] + children(pid) if pid else []
                postgres = children(args.postmaster)
                proxy_before, pg_before = cpu_seconds(proxy), cpu_seconds(postgres)
                requests, rps, p50, p99, bad, text = wrk(port, connections, args.duration, args.lua)
                proxy_cpu = (cpu_seconds(proxy) - proxy_before) / requests * 1e6
                pg_cpu = (cpu_seconds(postgres) - pg_before) / requests * 1e6
                with open(os.path.join(args.out, f"wrk_{name}_c{connections}_r{round_number}.txt"), "w") as f:
                    f.write(text)
                runs.setdefault((name, connections), []).append((rps, p50, p99, bad, proxy_cpu, pg_cpu))
                print(f"round {round_number}: {name} at {connections} connections: {rps:,.0f} requests/s, p50 "
                      f"{p50:.0f} us, p99 {p99:.0f} us, proxy CPU {proxy_cpu:.1f} us/request, PostgreSQL CPU "
                      f"{pg_cpu:.1f} us/request, non-2xx {bad}", flush=True)
    with open(os.path.join(args.out, "results.csv"), "w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(["cell", "connections", "round", "requests_per_s", "p50_us", "p99_us", "non_2xx",
                         "proxy_cpu_us_per_request", "postgres_cpu_us_per_request"])
        for (name, connections), values in runs.items():
            for i, v in enumerate(values, 1):
                writer.writerow([name, connections, i, f"{v[0]:.1f}", f"{v[1]:.1f}", f"{v[2]:.1f}", v[3],
                                 f"{v[4]:.2f}", f"{v[5]:.2f}"])
    median = {key: [statistics.median(v[i] for v in values) for i in range(6)] for key, values in runs.items()}
    names = [c[0] for c in cells]
    lines = [f"Median of {args.rounds} interleaved rounds of {args.duration} s per cell (wrk -t2, one cookie "
             "username=u<1..10000> at random per request).", "",
             "| cell | connections | requests/s | p50 | p99 | proxy CPU / request | PostgreSQL CPU / request |",
             "|---|--:|--:|--:|--:|--:|--:|"]
    for connections in (2, 32):
        for name in names:
            m = median[(name, connections)]
            lines.append(f"| {name} | {connections} | {m[0]:,.0f} | {m[1]:.0f} us | {m[2]:,.0f} us | {m[4]:.1f} us | "
                         f"{m[5]:.1f} us |")
    lines.append("")
    for connections in (2, 32):
        def m(name, i):
            return median[(name, connections)][i]
        proxy_latency = m("gate_nolimit", 1) - m("backend", 1)
        memory_latency = m("gate_memory", 1) - m("gate_nolimit", 1)
        durable_latency = m("gate_durable", 1) - m("gate_nolimit", 1)
        lines.append(
            f"- {connections} connections: gate_memory / gate_nolimit throughput **{m('gate_memory', 0) / m('gate_nolimit', 0):.2f}** "
            f"(target >= 0.8); gate_nolimit / nginx_proxy **{m('gate_nolimit', 0) / m('nginx_proxy', 0):.2f}** (target >= 0.5); "
            f"the proxy adds {proxy_latency:.0f} us to the backend's p50, the memory limiter {memory_latency:.0f} us more "
            f"(**{memory_latency / proxy_latency:.2f}x**, target < 0.3), the durable one {durable_latency:.0f} us "
            f"(**{durable_latency / proxy_latency:.2f}x**, target < 1); the seed's limiter: 1.46x")
    with open(os.path.join(args.out, "results.md"), "w") as f:
        f.write("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
