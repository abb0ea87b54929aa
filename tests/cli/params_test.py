#!/usr/bin/env python3
"""Exact parameter accounting against the GPU: for every measured model exported with the
legacy exporter in training mode, memest's parameter bytes equal
sum(p.numel() * p.element_size()) as validate/ recorded it. Also: every bundled model
(torch 2.11 and torch 1.13 exports) loads and estimates.

Usage: params_test.py MEMEST   (run from the repository root). Prints 'N passed, N failed'.
"""
import glob
import json
import os
import subprocess
import sys

memest = os.path.abspath(sys.argv[1])
results = []


def check(name, ok, why=""):
    results.append(ok)
    print("%s  %s%s" % ("ok  " if ok else "FAIL", name, "" if ok else ": " + why))


def estimate(path, args):
    p = subprocess.run([memest, path] + args + ["--json"], capture_output=True, text=True, timeout=60)
    return (json.loads(p.stdout), None) if p.returncode == 0 else (None, p.stderr.strip())


def dynamo_exports():
    """Files whose line in models/README.md (or models/holdout/README.md) names the dynamo exporter."""
    out = set()
    for readme in ("models/README.md", "models/holdout/README.md"):
        if os.path.exists(readme):
            for line in open(readme):
                cells = [c.strip().strip("`") for c in line.split("|")]
                if len(cells) > 3 and cells[1].endswith(".onnx") and cells[3].startswith("dynamo"):
                    out.add(os.path.basename(cells[1]))
    return out


DYNAMO = dynamo_exports()


seen = set()
for res in ("validate/results/h200-torch2.11.jsonl", "validate/results/holdout-h200-torch2.11.jsonl"):
    if not os.path.exists(res):
        continue
    for line in open(res):
        r = json.loads(line)
        if r.get("status") != "ok" or r["onnx"] in seen:
            continue
        seen.add(r["onnx"])
        path = os.path.join("models", r["onnx"])
        out, err = estimate(path, r["memest_args"])
        if out is None:
            check(r["model"], False, err)
            continue
        got = out["accounting"]["parameter_bytes"]
        want = r["param_bytes"]
        if os.path.basename(path) in DYNAMO and got != want:
            # Dynamo exports may drop parameters the forward never reads; report, don't fail.
            print("note  %s (dynamo export): memest %d vs torch %d parameter bytes" % (r["model"], got, want))
            continue
        check("%s parameter bytes %d == torch's %d" % (r["model"], got, want), got == want)

for path in sorted(glob.glob("models/torch113/*.onnx")):
    name = os.path.basename(path)[:-5]
    args = ["--batch", "2"]
    if any(k in name for k in ("gpt", "bert", "lstm", "transformer")):
        args += ["--dim", "seq=16"]
    if "autoencoder" in name:
        args += ["--loss", "mse"]
    if "mobilenet_v3_small" in name:
        args += ["--loss", "sum"]
    out, err = estimate(path, args)
    check("torch 1.13 export %s loads and estimates" % name, out is not None and out["peak_bytes"] > 0, err or "")

passed = sum(results)
print("%d passed, %d failed" % (passed, len(results) - passed))
sys.exit(0 if passed == len(results) else 1)
