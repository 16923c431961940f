#!/usr/bin/env python3
"""Holistic Trace Analysis's figures for profiler traces, as JSON: the oracle that
tests/trace/hta_agreement_test.cpp compares `torchperf trace` with.

Usage: hta_figures.py [--out FILE] TRACE|FOLDER... (.json or .json.gz files, one rank each; a
folder stands for its trace files, sorted by name)

For each trace, run in the .venv (HolisticTraceAnalysis is in requirements-no-deps.txt):
  device_events     kernels, copies and sets on a stream (HTA's GPU kernel events, syncs excluded)
  by_iteration      those events by HTA's iteration column: the ProfilerStep whose host range holds
                    the runtime call that launched them (correlation id), -1 when none does
  scoped_events     the events HTA's analyses read: TraceAnalysis(include_last_profiler_step=True)
  kernel_types      get_gpu_kernel_breakdown(include_memory_kernels=True): time per class, µs
  temporal          get_temporal_breakdown: idle, compute, non-compute and kernel time, µs
  idle_causes       get_idle_time_breakdown: per stream, host wait, kernel wait and other, µs
  overlap_pct       get_comm_comp_overlap: communication time overlapped by computation, %
  queue_length      get_queue_length_summary: per stream, max and mean over its changes
  launch_stats      get_cuda_kernel_launch_stats(include_memory_events=False): kernels matched to
                    their launch, short ones, runtime and delay outliers, medians (µs)

Two steps make HTA read the times torchperf reads, changing no figure:
- HTA parses timestamps (µs) as float64, which at a 2024 epoch (1.7e15 µs) keeps a quarter of a
  microsecond: nanosecond traces lose their ns. This rebases each trace's clock to its earliest
  event first (an exact shift, with decimal arithmetic), so that float64 keeps every ns.
- HTA rounds nanosecond timestamps to microseconds (start up, end down) to hide overlaps that
  PyTorch before 2.3 wrote; torchperf keeps nanoseconds, so this runs HTA with that rounding
  off (HTA_DISABLE_NS_ROUNDING=1).
"""
import decimal
import gzip
import json
import logging
import math
import os
import shutil
import sys
import tempfile

os.environ.setdefault("HTA_DISABLE_NS_ROUNDING", "1")
logging.disable(logging.WARNING)


def number(x):
    x = float(x)
    return None if math.isnan(x) else x


def rebased(path, folder):
    """A copy of the trace in `folder` with every timestamp shifted by the earliest one."""
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt") as f:
        trace = json.load(f, parse_float=decimal.Decimal)
    events = trace["traceEvents"] if isinstance(trace, dict) else trace
    times = [e["ts"] for e in events if isinstance(e, dict) and "ts" in e]
    origin = min(times) if times else 0
    for e in events:
        if isinstance(e, dict) and "ts" in e:
            e["ts"] = float(e["ts"] - origin)
    name = os.path.basename(path)
    name = name[:-3] if name.endswith(".gz") else name
    copy = os.path.join(folder, name if name.endswith(".json") else name + ".json")

    def plain(x):
        if isinstance(x, decimal.Decimal):
            return float(x)
        raise TypeError(type(x))

    with open(copy, "w") as f:
        json.dump(trace, f, default=plain)
    return copy


def kernel_types_in_ns(trace, rank):
    from hta.analyzers.breakdown_analysis import BreakdownAnalysis
    from hta.utils.utils import KernelType, get_kernel_type

    sym = trace.symbol_table.get_sym_table()
    df = trace.get_trace(rank)
    kernels = df[df["stream"].ne(-1)].copy()
    kernels["kernel_type"] = kernels["name"].apply(lambda n: get_kernel_type(sym[n]))
    kernels["ts"] = (kernels["ts"] * 1000).round()
    kernels["dur"] = (kernels["dur"] * 1000).round()
    kinds = [KernelType.COMPUTATION.name, KernelType.COMMUNICATION.name, KernelType.MEMORY.name]
    ns = BreakdownAnalysis._get_gpu_kernel_type_time(kernels, kinds)
    exact = {r.kernel_type: number(r["sum"]) / 1000 for _, r in ns.iterrows()}
    # The stretches each label's time is made of (HTA's sweep over merged intervals, counted):
    # the µs breakdown loses less than a microsecond on each.
    from hta.utils.utils import merge_kernel_intervals
    edges = []
    for bit, kind in enumerate(kinds):
        merged = merge_kernel_intervals(kernels[kernels["kernel_type"].eq(kind)].copy())
        edges += [(t, 1 << bit) for t in merged["ts"]] + [(t, -(1 << bit)) for t in merged["end"]]
    edges.sort()
    stretches = {}
    running = 0
    for k, (t, delta) in enumerate(edges):
        running += delta
        if running > 0 and k + 1 < len(edges) and edges[k + 1][0] > t:
            label = " overlapping ".join(kinds[b] for b in range(3) if running & (1 << b))
            stretches[label] = stretches.get(label, 0) + 1
    return exact, stretches


def figures(path):
    from hta.common.trace import Trace
    from hta.trace_analysis import TraceAnalysis

    folder = tempfile.mkdtemp(prefix="hta-")
    try:
        rebased(path, folder)
        out = {"file": os.path.basename(path)}

        # Unfiltered: every event, with HTA's iteration column.
        raw = Trace(trace_dir=folder)
        raw.parse_traces(use_multiprocessing=False, use_memory_profiling=False)
        df = next(iter(raw.traces.values()))
        sym = raw.symbol_table.get_sym_id_map()
        cats = [sym[c] for c in ("kernel", "gpu_memcpy", "gpu_memset") if c in sym]
        on_device = df[df["stream"].ge(0) & df["cat"].isin(cats)]
        out["device_events"] = int(len(on_device))
        counts = on_device.groupby("iteration").size() if len(on_device) else {}
        out["by_iteration"] = {str(int(k)): int(v) for k, v in dict(counts).items()}
        # add_iteration gives GPU events an iteration only on streams above 0 (a HIP trace's
        # stream 0 keeps none).
        unassigned = on_device[on_device["iteration"].isna()] if len(on_device) else on_device
        out["no_iteration"] = int(len(unassigned))
        out["no_iteration_stream0"] = int((unassigned["stream"] == 0).sum()) if len(unassigned) else 0
        steps = sorted(
            i for i in df["iteration"].unique() if i >= 0) if "iteration" in df.columns else []
        out["steps"] = [int(i) for i in steps]
        # HTA filters the events its analyses read only when the trace names two or more steps.
        names = [n for n in raw.symbol_table.get_sym_id_map() if "ProfilerStep" in n]
        out["step_names"] = len(names)
        if len(on_device) == 0:
            return out

        a = TraceAnalysis(trace_dir=folder, include_last_profiler_step=True)
        rank = next(iter(a.t.traces))
        scoped = a.t.get_trace(rank)
        sym = a.t.symbol_table.get_sym_id_map()
        cats = [sym[c] for c in ("kernel", "gpu_memcpy", "gpu_memset") if c in sym]
        out["scoped_events"] = int((scoped["stream"].ge(0) & scoped["cat"].isin(cats)).sum())

        types, _ = a.get_gpu_kernel_breakdown(visualize=False, include_memory_kernels=True,
                                              num_kernels=1)
        out["kernel_types"] = {r.kernel_type: number(r["sum"]) for _, r in types.iterrows()}
        # That breakdown cuts each stretch of time to whole µs (astype(int)); the same HTA
        # function on times in ns keeps them whole, and counts the stretches per label.
        out["kernel_types_ns"], out["kernel_type_stretches"] = kernel_types_in_ns(a.t, rank)

        t = a.get_temporal_breakdown(visualize=False).iloc[0]
        out["temporal"] = {
            "idle": number(t["idle_time(us)"]),
            "compute": number(t["compute_time(us)"]),
            "non_compute": number(t["non_compute_time(us)"]),
            "kernel_time": number(t["kernel_time(us)"]),
        }

        # HTA's temporal breakdown counts every event on a stream as busy, cuda_sync waits too;
        # torchperf counts only kernels, copies and sets: the same breakdown without the syncs.
        if "cuda_sync" in sym:
            a.t.traces[rank] = scoped[scoped["cat"] != sym["cuda_sync"]]
            t = a.get_temporal_breakdown(visualize=False).iloc[0]
            a.t.traces[rank] = scoped
        out["temporal_without_syncs"] = {
            "idle": number(t["idle_time(us)"]),
            "compute": number(t["compute_time(us)"]),
            "non_compute": number(t["non_compute_time(us)"]),
            "kernel_time": number(t["kernel_time(us)"]),
        }

        idle, _ = a.get_idle_time_breakdown(ranks=[rank], visualize=False,
                                             show_idle_interval_stats=False)
        causes = {}
        for _, r in idle.iterrows():
            causes.setdefault(str(int(r["stream"])), {})[r["idle_category"]] = number(r["idle_time"])
        out["idle_causes"] = causes

        overlap = a.get_comm_comp_overlap(visualize=False)
        out["overlap_pct"] = number(overlap.iloc[0]["comp_comm_overlap_pctg"])

        queue = a.get_queue_length_summary(ranks=[rank])
        if queue is not None:
            out["queue_length"] = {
                str(int(stream)): {"max": number(r[("queue_length", "max")]),
                                   "mean": number(r[("queue_length", "mean")])}
                for (_, stream), r in queue.iterrows()
            }
        stats = a.get_cuda_kernel_launch_stats(ranks=[rank], include_memory_events=False,
                                               visualize=False)[rank]
        short = stats[(stats["cpu_duration"] <= 50) & (stats["gpu_duration"] < stats["cpu_duration"])]
        out["launch_stats"] = {
            "matched": int(len(stats)),
            "short": int(len(short)),
            "runtime_outliers": int((stats["cpu_duration"] > 50).sum()),
            "delay_outliers": int((stats["launch_delay"] > 100).sum()),
            "launch_median": number(stats["cpu_duration"].median()) if len(stats) else None,
            "kernel_median": number(stats["gpu_duration"].median()) if len(stats) else None,
            "delay_median": number(stats["launch_delay"].median()) if len(stats) else None,
        }
        return out
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def main(argv):
    args = argv[1:]
    out = None
    if len(args) >= 2 and args[0] == "--out":
        out, args = args[1], args[2:]
    paths = []
    for a in args:
        if os.path.isdir(a):
            paths += sorted(os.path.join(a, n) for n in os.listdir(a)
                            if n.endswith(".json") or n.endswith(".json.gz"))
        else:
            paths.append(a)
    if not paths:
        print("usage: hta_figures.py [--out FILE] TRACE|FOLDER...", file=sys.stderr)
        return 2
    text = json.dumps([figures(p) for p in paths], indent=1)
    if out is None:
        print(text)
    else:
        with open(out + ".tmp", "w") as f:
            f.write(text)
        os.replace(out + ".tmp", out)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
