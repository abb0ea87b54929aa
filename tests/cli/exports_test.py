#!/usr/bin/env python3
"""Graphs of users' own models exported with torch 1.13's legacy exporter
(tests/data/exports/make_exports.py, issue 17): each loads with a dynamic batch (and
sequence) without a shape memest had to assume, its parameter bytes equal torch's
count, a LayerNorm spelled out at opset 14 estimates as the fused one at opset 17 does,
and a ModuleDict inside a ModuleList keeps its block index in the layer table.

Usage: exports_test.py MEMEST   (run from the repository root). Prints 'N passed, N failed'.
"""
import glob
import json
import os
import subprocess
import sys

import onnx

memest = os.path.abspath(sys.argv[1])
DATA = "tests/data/exports"
results = []


def check(name, ok, why=""):
    results.append(ok)
    print("%s  %s%s" % ("ok  " if ok else "FAIL", name, "" if ok else ": " + why))


def estimate(path, args):
    p = subprocess.run([memest, path] + args + ["--json"], capture_output=True, text=True, timeout=60)
    return (json.loads(p.stdout), None) if p.returncode == 0 else (None, p.stderr.strip())


def args_for(path):
    return ["--batch", "8"] + (["--dim", "seq=64"] if "causal" in path or "dict_blocks" in path else [])


for path in sorted(glob.glob(os.path.join(DATA, "*.onnx"))):
    name = os.path.basename(path)
    out, err = estimate(path, args_for(path))
    if out is None:
        check(name + " loads", False, err)
        continue
    check(name + " loads", True)
    check(name + " needs no fallback", out["fallback_bytes"] == 0 and not out["unsupported_ops"],
          "%d bytes on assumed shapes; warnings %s" % (out["fallback_bytes"], out["warnings"]))
    meta = {p.key: p.value for p in onnx.load(path, load_external_data=False).metadata_props}
    want = int(meta["memest.param_bytes"])
    got = out["accounting"]["parameter_bytes"]
    check(name + " parameter bytes", got == want, "%d, torch counts %d" % (got, want))

# LayerNorm: opset 14 spells it ReduceMean/Sub/Pow/ReduceMean/Add/Sqrt/Div/Mul/Add; fused
# back, the estimate is the opset 17 file's (within 0.1%) for every optimizer and amp.
for extra in ([], ["--optim", "adam"], ["--amp"], ["--amp", "bf16", "--optim", "adamw"]):
    a, ea = estimate(os.path.join(DATA, "dict_blocks_opset14.onnx"), args_for("dict_blocks") + extra)
    b, eb = estimate(os.path.join(DATA, "dict_blocks_opset17.onnx"), args_for("dict_blocks") + extra)
    if a is None or b is None:
        check("opset 14 vs 17 %s" % extra, False, ea or eb)
        continue
    rel = abs(a["peak_bytes"] - b["peak_bytes"]) / b["peak_bytes"]
    check("opset 14 vs 17 %s" % " ".join(extra), rel <= 0.001,
          "peak %d vs %d (%.2f%%)" % (a["peak_bytes"], b["peak_bytes"], 100 * rel))

# ModuleDict in a ModuleList: the layer table names blocks.N.*, not ln1_1.
out, err = estimate(os.path.join(DATA, "dict_blocks_opset17.onnx"), args_for("dict_blocks") + ["--depth", "0"])
if out is None:
    check("module paths", False, err)
else:
    modules = {r["module"] for r in out["layers"]}
    want = {"blocks.0.ln1", "blocks.2.ln1", "blocks.1.ff.0", "blocks.2.ff.1", "blocks.2.qkv"}
    check("module paths from parameter names", want <= modules and not any("_1" in m for m in modules),
          "layers %s" % sorted(modules))

print("%d passed, %d failed" % (sum(results), len(results) - sum(results)))
sys.exit(0 if all(results) else 1)
