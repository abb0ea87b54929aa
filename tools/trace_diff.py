#!/usr/bin/env python3
"""One traced case beside memest's account of it: per-phase peaks and what is live at the peak.

    python3 tools/trace_diff.py TRACES.jsonl[.xz] MODEL CONFIG ONNX [--memest build/memest]

TRACES is a `validate measure --trace ... --trace-detail` output (validate/results/traces*).
Prints the GPU's per-phase peaks (the trace's samples) beside memest's (--json phases), then
the GPU's live blocks at the peak grouped by phase and module (forward) or autograd node
(backward), then memest's live_at_peak groups. Reading the two lists side by side finds
which tensor of which phase is missing.
"""
import argparse
import collections
import json
import lzma
import signal
import subprocess
import sys

MiB = 1 << 20


def load_trace(path, model, config):
    opener = lzma.open if path.endswith(".xz") else open
    with opener(path, "rt") as f:
        for line in f:
            r = json.loads(line)
            if r.get("model") == model and r.get("config") == config and "live_at_peak_all" in r:
                return r
    sys.exit("trace_diff: %s holds no detailed trace of %s %s" % (path, model, config))


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("traces")
    p.add_argument("model")
    p.add_argument("config")
    p.add_argument("onnx")
    p.add_argument("--memest", default="build/memest")
    p.add_argument("--by-module", action="store_true",
                   help="instead of the two lists: bytes live at the peak per module, GPU beside memest, largest gaps first")
    p.add_argument("--depth", type=int, default=2, help="with --by-module: module paths cut to this many parts")
    p.add_argument("--top", type=int, default=25)
    a = p.parse_args()
    t = load_trace(a.traces, a.model, a.config)
    out = subprocess.run([a.memest, a.onnx] + t["memest_args"] + ["--json"], capture_output=True, text=True)
    if out.returncode != 0:
        sys.exit("trace_diff: memest failed: " + out.stderr.strip())
    m = json.loads(out.stdout)
    print("%s %s: GPU peak %.1f MiB (%s), memest %.1f MiB (%s, %s)" % (
        a.model, a.config, t["peak_allocated"] / MiB, t.get("peak_at"), m["peak_bytes"] / MiB,
        m.get("phase"), m.get("node")))
    print("\nper phase (peak MiB): GPU | memest")
    gpu = [(name, peak) for name, _end, peak in t["samples"]]
    for name, peak in gpu:
        print("  %-16s %10.1f" % (name, peak / MiB))
    for ph in m["phases"]:
        print("  memest it%d/%-10s %10.1f (end %.1f)" % (ph["iteration"], ph["phase"], ph["peak_bytes"] / MiB,
                                                      ph["end_bytes"] / MiB))
    cols = t["live_at_peak_all_columns"]
    groups = collections.Counter()
    counts = collections.Counter()
    for row in t["live_at_peak_all"]:
        r = dict(zip(cols, row))
        where = r["module"] or ("%s@%s" % (r["bw_node"], r["bw_module"]) if r["bw_node"] else "")
        if not where:
            stack = t["stack_table"][r["stack"]] if r["stack"] is not None else []
            where = stack[0] if stack else "?"
        key = (r["phase"], where)
        groups[key] += r["size"]
        counts[key] += 1
    if a.by_module:
        return by_module(groups, m["live_at_peak"], a.top, a.depth)
    print("\nGPU live at peak (%.1f MiB):" % (sum(groups.values()) / MiB))
    for (phase, where), b in groups.most_common(a.top):
        print("  %8.2f MiB x%-3d %-14s %s" % (b / MiB, counts[(phase, where)], phase, where))
    print("\nmemest live at peak:")
    for g in sorted(m["live_at_peak"], key=lambda g: -g["bytes"])[:a.top]:
        print("  %8.2f MiB x%-3d %-12s %s" % (g["bytes"] / MiB, g["count"], g["category"], g["allocated_by"]))
    return 0


def by_module(gpu_groups, memest_groups, top, depth):
    """Per module: what the GPU held at its peak (forward blocks by module, backward ones by
    the module of their autograd node) and what memest held at its own, gaps first."""
    gpu, est = collections.Counter(), collections.Counter()
    for (phase, where), b in gpu_groups.items():
        gpu[".".join(where.split("@")[-1].split(".")[:depth])] += b
    for g in memest_groups:
        est[".".join(g["allocated_by"].split(" (")[0].split(".")[:depth])] += g["bytes"]
    rows = sorted(set(gpu) | set(est), key=lambda k: -abs(gpu[k] - est[k]))
    print("\nlive at peak by module (MiB): GPU | memest | memest - GPU")
    for k in rows[:top]:
        print("  %10.2f %10.2f %+10.2f  %s" % (gpu[k] / MiB, est[k] / MiB, (est[k] - gpu[k]) / MiB, k or "(none)"))
    return 0


if __name__ == "__main__":
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)  # quiet when piped into head
    sys.exit(main())
