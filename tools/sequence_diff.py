#!/usr/bin/env python3
"""memest's request sequence beside the GPU's, for one traced case.

    python3 tools/sequence_diff.py TRACES.jsonl[.xz] CASE ONNX [--memest build/memest] [--min-mb 1] [--show 30]

TRACES holds whole-case allocation traces with their events (`python3 -m validate kernels
--parts cases`: validate/results/cases-*, rtrace-*, traces4/7/8/9-*), CASE is its case name
("resnet18/b2-fp32-adamw"). memest runs with the case's own arguments and writes its events
(`--events`); both sequences keep the requests and frees of at least --min-mb MB, and are
aligned (difflib). Prints the match ratio, then each stretch where they differ, memest's
side with the node that made each block. The caching allocator model reproduces the GPU
given the GPU's sequence (tests/allocator_trace_test.cc), so where reserved memory is
missed, the difference is in this sequence: which tensor is made or freed, and when.
"""
import argparse
import difflib
import json
import lzma
import os
import subprocess
import sys
import tempfile


def load_trace(path, case, uncapped=False):
    """The first record of CASE with its events in TRACES (with `uncapped`, the first
    one measured without a cap)."""
    opener = lzma.open if path.endswith(".xz") else open
    with opener(path, "rt") as f:
        for line in f:
            r = json.loads(line)
            if r.get("case") == case and isinstance(r.get("events"), list) and not (uncapped and r.get("budget_bytes")):
                return r
    sys.exit("%s: %s holds no event trace of %s" % (os.path.basename(sys.argv[0]), path, case))


def gpu_sequence(path, case, min_bytes):
    r = load_trace(path, case)
    live, seq = {}, []
    for e in r["events"]:
        kind, addr, size = e[0], e[1], e[2]
        if kind in ("a", "alloc"):
            live[addr] = size
            if size >= min_bytes:
                seq.append(("A", size, ""))
        elif kind in ("f", "free_requested"):
            size = live.pop(addr, 0)  # blocks made before the recording began are left out
            if size >= min_bytes:
                seq.append(("F", size, ""))
    return r["memest_args"], seq


def memest_events(memest, onnx, args):
    """memest's request events for the case (`--events`): (iteration, phase, kind A/F,
    bytes, category, node, block) each."""
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "events.tsv")
        run = subprocess.run([memest, onnx] + args + ["--events", path], capture_output=True, text=True)
        if run.returncode != 0:
            sys.exit("%s: memest failed: %s" % (os.path.basename(sys.argv[0]), run.stderr.strip()))
        with open(path) as f:
            next(f)
            return [tuple(line.rstrip("\n").split("\t")) for line in f]


def memest_sequence(memest, onnx, args, min_bytes):
    seq = []
    for it, phase, kind, size, category, node, block in memest_events(memest, onnx, args):
        if int(size) >= min_bytes:
            seq.append((kind, int(size), "it%s %s %s b%s %s" % (it, phase, category, block, node)))
    return seq


def match_ratio(traces, case, onnx, memest="build/memest", min_mb=1.0):
    """The match ratio main() prints (difflib's, over requests and frees of >= min_mb MB)."""
    args, gpu = gpu_sequence(traces, case, min_mb * 1e6)
    mem = memest_sequence(memest, onnx, args, min_mb * 1e6)
    key = lambda x: "%s %.1f" % (x[0], x[1] / 1e6)
    return difflib.SequenceMatcher(None, [key(x) for x in gpu], [key(x) for x in mem], autojunk=False).ratio()


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("traces")
    p.add_argument("case")
    p.add_argument("onnx")
    p.add_argument("--memest", default="build/memest")
    p.add_argument("--min-mb", type=float, default=1.0, help="leave out requests below this many MB (10^6 B)")
    p.add_argument("--show", type=int, default=30, help="stretches that differ to print")
    p.add_argument("--live", action="store_true",
                   help="print, after each stretch that differs, the bytes each side holds live "
                        "(of the requests kept) and their difference, so a jump says where memory is missed")
    a = p.parse_args()
    min_bytes = a.min_mb * 1e6
    args, gpu = gpu_sequence(a.traces, a.case, min_bytes)
    mem = memest_sequence(a.memest, a.onnx, args, min_bytes)
    key = lambda x: "%s %.1f" % (x[0], x[1] / 1e6)  # sizes agree to 0.1 MB: rounding differs below
    ga, ma = [key(x) for x in gpu], [key(x) for x in mem]
    sm = difflib.SequenceMatcher(None, ga, ma, autojunk=False)
    print("%s: GPU %d requests and frees, memest %d; match ratio %.3f" % (a.case, len(ga), len(ma), sm.ratio()))
    shown = 0
    live_gpu = live_mem = 0
    for op, i1, i2, j1, j2 in sm.get_opcodes():
        live_gpu += sum(x[1] if x[0] == "A" else -x[1] for x in gpu[i1:i2])
        live_mem += sum(x[1] if x[0] == "A" else -x[1] for x in mem[j1:j2])
        if op == "equal":
            continue
        shown += 1
        if shown > a.show:
            print("...")
            break
        print("%-7s GPU[%d:%d] %s" % (op, i1, i2, " ".join(ga[i1:i2][:8]) + (" ..." if i2 - i1 > 8 else "")))
        for x in mem[j1:j2][:8]:
            print("          memest %s %.1f MB  %s" % (x[0], x[1] / 1e6, x[2]))
        if a.live:
            print("          live after: GPU %.1f MB, memest %.1f MB, memest - GPU %+.1f MB"
                  % (live_gpu / 1e6, live_mem / 1e6, (live_mem - live_gpu) / 1e6))
    return 0


if __name__ == "__main__":
    sys.exit(main())
