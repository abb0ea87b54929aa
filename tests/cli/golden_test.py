#!/usr/bin/env python3
"""Golden CLI output for the bundled models: `memest models/X.onnx --batch 8 --optim adam`.

Usage: golden_test.py MEMEST [--update]    (run from the repository root)
--update rewrites tests/golden/*.txt from the current binary; review the diff before
committing it. Also checks that the layer tree's top-level rows sum to its footer
and parents hold their children, and that the components at the peak sum to the peak (JSON).
Prints 'N passed, N failed' last.
"""
import glob
import json
import os
import re
import subprocess
import sys

memest = os.path.abspath(sys.argv[1])
update = "--update" in sys.argv[2:]
ARGS = ["--batch", "8", "--optim", "adam"]
results = []


def check(name, ok, why=""):
    results.append(ok)
    print("%s  %s%s" % ("ok  " if ok else "FAIL", name, "" if ok else ": " + why))


def parse_size(text):
    num, unit = text.split()
    return float(num) * {"B": 1, "KiB": 2**10, "MiB": 2**20, "GiB": 2**30}[unit]


# A tree row: glyphs, the module's name, ops, output shape, then the three figures.
ROW = re.compile(r"^(?P<label>.*?)\s+(?P<params>--|[\d,]+)\s+(?P<saved>--|[\d.]+ (?:B|KiB|MiB|GiB))"
                 r"\s+(?P<share>--|[\d.]+%)$")


def figures(m):
    """(parameters, saved bytes, share in %) of a matched row; -- is 0."""
    return (0 if m["params"] == "--" else int(m["params"].replace(",", "")),
            0 if m["saved"] == "--" else parse_size(m["saved"]),
            0 if m["share"] == "--" else float(m["share"][:-1]))


def check_tree(name, text):
    """The top-level rows sum to the footer, and no parent holds less than its children:
    parameters exactly; saved bytes and shares within what printing rounds away."""
    rows, footer = [], None
    for line in text.splitlines():
        m = ROW.match(line)
        if not m or line.startswith("Layer"):
            continue
        if line.startswith("Total"):
            footer = figures(m)
            continue
        glyph = min(i for i in (line.find("\u251c\u2500"), line.find("\u2514\u2500")) if i >= 0)
        rows.append((glyph // 3 + 1, figures(m)))

    def slack(total, step, n):
        # Each printed figure is off by at most half its last digit.
        return max(0.01 * total, step * (n + 1))

    def close(total, parts, step, n):
        return abs(total - sum(parts)) <= slack(total, step, n)

    def at_least(total, parts, step, n):
        return total + slack(total, step, n) >= sum(parts)

    top = [f for d, f in rows if d == 1]
    ok = footer is not None and footer[0] == sum(f[0] for f in top) \
        and close(footer[1], [f[1] for f in top], 2**20, 0) and close(footer[2], [f[2] for f in top], 0.05, len(top))
    check("%s top-level rows sum to the footer" % name, ok,
          "rows %r vs footer %r" % (tuple(sum(f[i] for f in top) for i in range(3)), footer))
    bad = []
    for i, (d, f) in enumerate(rows):
        kids = []
        for d2, f2 in rows[i + 1:]:
            if d2 <= d:
                break
            if d2 == d + 1:
                kids.append(f2)
        if kids and (f[0] < sum(k[0] for k in kids) or not at_least(f[1], [k[1] for k in kids], 2**20, 0)
                     or not at_least(f[2], [k[2] for k in kids], 0.05, len(kids))):
            bad.append(i)
    check("%s parents hold their children" % name, bool(rows) and not bad, "rows %r" % bad)


def readme_args():
    """Each bundled model's options from models/README.md's table (its last column):
    the dims a model needs, e.g. --dim seq=128."""
    out = {}
    if not os.path.exists("models/README.md"):
        return out
    for line in open("models/README.md"):
        m = re.match(r"^\| `([\w.-]+)\.onnx` \|.*\| `([^`]*)` \|\s*$", line)
        if m:
            out[m.group(1)] = m.group(2).split()
    return out


README_ARGS = readme_args()
models = sorted(glob.glob("models/*.onnx"))
for path in models:
    name = os.path.splitext(os.path.basename(path))[0]
    extra = list(README_ARGS.get(name, []))
    meta = path + ".args"
    if os.path.exists(meta):
        extra = open(meta).read().split()
    p = subprocess.run([memest, path] + ARGS + extra, capture_output=True, text=True, timeout=60)
    if p.returncode != 0:
        check(name, False, p.stderr.strip())
        continue
    golden = os.path.join("tests", "golden", name + ".txt")
    if update:
        with open(golden, "w") as f:
            f.write(p.stdout)
    want = open(golden).read() if os.path.exists(golden) else None
    check("%s matches %s" % (name, golden), want == p.stdout, "output differs (rerun with --update and review)")
    check_tree(name, p.stdout)
    j = json.loads(subprocess.run([memest, path] + ARGS + extra + ["--json"], capture_output=True, text=True).stdout)
    check("%s components sum to peak_bytes" % name, sum(j["components"].values()) == j["peak_bytes"])

if not models:
    check("bundled models exist", False, "models/*.onnx is empty")
passed = sum(results)
print("%d passed, %d failed" % (passed, len(results) - passed))
sys.exit(0 if passed == len(results) else 1)
