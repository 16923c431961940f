#!/usr/bin/env python3
"""Writes a large Kineto trace built from the real events of a smaller one, for `trace`'s
benchmark: the source's events repeated, each copy shifted in time past the previous one, with
its correlation ids, flow ids and step numbers renumbered so that launches still join their
kernels and steps stay distinct.

usage: make_big_trace.py SOURCE.json[.gz] OUT.json SIZE_MB
"""
import gzip
import json
import sys


def open_any(path):
    with open(path, "rb") as f:
        magic = f.read(2)
    return gzip.open(path, "rt") if magic == b"\x1f\x8b" else open(path, "rt")


def main():
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    source, out, size_mb = sys.argv[1], sys.argv[2], float(sys.argv[3])
    with open_any(source) as f:
        trace = json.load(f)
    events = trace["traceEvents"]
    numeric = [e for e in events if isinstance(e.get("ts"), (int, float))]
    first = min(e["ts"] for e in numeric)
    last = max(e["ts"] + e.get("dur", 0) for e in numeric)
    period = (last - first) + 1000  # µs between copies
    ids = [e.get("id", 0) for e in events if isinstance(e.get("id"), int)]
    ids += [e["args"].get(k, 0) for e in events if isinstance(e.get("args"), dict)
            for k in ("correlation", "External id") if isinstance(e["args"].get(k), int)]
    id_stride = max(ids + [0]) + 1
    steps = [e for e in events if str(e.get("name", "")).startswith("ProfilerStep#")]
    step_stride = max([int(e["name"].split("#")[1]) for e in steps] + [0]) + 1
    header = {k: v for k, v in trace.items() if k != "traceEvents"}
    target = int(size_mb * 1e6)
    written = 0
    with open(out, "w") as f:
        head = json.dumps(header)[:-1]  # without the closing brace
        f.write(head + ', "traceEvents": [\n')
        written += len(head)
        copy = 0
        first_event = True
        while written < target:
            parts = []
            for e in events:
                e = dict(e)
                if copy > 0:
                    if isinstance(e.get("ts"), (int, float)):
                        e["ts"] = e["ts"] + copy * period
                    if isinstance(e.get("id"), int):
                        e["id"] = e["id"] + copy * id_stride
                    if isinstance(e.get("args"), dict):
                        args = dict(e["args"])
                        for k in ("correlation", "External id"):
                            if isinstance(args.get(k), int):
                                args[k] = args[k] + copy * id_stride
                        e["args"] = args
                    name = e.get("name", "")
                    if isinstance(name, str) and name.startswith("ProfilerStep#"):
                        e["name"] = "ProfilerStep#%d" % (int(name.split("#")[1]) + copy * step_stride)
                parts.append(json.dumps(e))
            chunk = ("" if first_event else ",\n") + ",\n".join(parts)
            first_event = False
            f.write(chunk)
            written += len(chunk)
            copy += 1
        f.write("\n]}\n")
    print("wrote %s: %.1f MB, %d copies of %d events" % (out, written / 1e6, copy, len(events)))


if __name__ == "__main__":
    main()
