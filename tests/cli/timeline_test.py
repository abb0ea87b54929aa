#!/usr/bin/env python3
"""`memest MODEL --timeline FILE.svg|.html`: the SVG is well-formed XML, draws every
category it names, and marks the peak where the simulator puts it, naming its node.

Usage: timeline_test.py MEMEST    (run from the repository root)
Prints 'N passed, N failed' last.
"""
import json
import os
import re
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET

memest = os.path.abspath(sys.argv[1])
SVG = "{http://www.w3.org/2000/svg}"
results = []


def check(name, ok, why=""):
    results.append(bool(ok))
    print("%s  %s%s" % ("ok  " if ok else "FAIL", name, "" if ok else ": " + why))


def run(args):
    return subprocess.run([memest] + args, capture_output=True, text=True, timeout=120)


def path_points(d):
    """(x, y) corners of an M/H/V path."""
    x = y = 0.0
    out = []
    for cmd, a, b in re.findall(r"([MHV])([-\d.]+)(?: ([-\d.]+))?", d):
        if cmd == "M":
            x, y = float(a), float(b)
        elif cmd == "H":
            x = float(a)
        else:
            y = float(a)
        out.append((x, y))
    return out


with tempfile.TemporaryDirectory() as tmp:
    for model, extra in [("models/resnet18.onnx", ["--batch", "8", "--optim", "adam"]),
                         ("models/gpt_mini.onnx", ["--batch", "4", "--optim", "adamw", "--amp", "bf16", "--dim", "seq=256"]),
                         ("models/densenet121.onnx", ["--batch", "8", "--optim", "sgd"])]:
        if not os.path.exists(model):
            continue
        name = os.path.basename(model)
        svg = os.path.join(tmp, name + ".svg")
        p = run([model] + extra + ["--json", "--timeline", svg])
        check("%s --timeline exits 0" % name, p.returncode == 0, p.stderr.strip())
        if p.returncode != 0:
            continue
        est = json.loads(p.stdout)
        try:
            root = ET.parse(svg).getroot()
        except ET.ParseError as e:
            check("%s SVG is well-formed" % name, False, str(e))
            continue
        check("%s SVG is well-formed" % name, root.tag == SVG + "svg", root.tag)
        peak = root.find(".//%sg[@id='peak']" % SVG)
        text = " ".join("".join(t.itertext()) for t in peak.iter(SVG + "text")) if peak is not None else ""
        where = est["node"] or est["phase"]  # no node: the optimizer step, say
        check("%s marks the peak node" % name, where in text, "%r not in %r" % (where, text))
        check("%s labels the peak bytes and event" % name,
              "{:,} B".format(est["peak_bytes"]) in text and "event {:,}".format(est["event"]) in text, text)
        # The marker stands where the total curve is highest.
        line = [l for l in peak.iter(SVG + "line") if l.get("x1") == l.get("x2")][0]
        px = float(line.get("x1"))
        total = path_points(root.find(".//%spath[@id='total']" % SVG).get("d"))
        top = min(y for _, y in total)
        xs = [x for x, y in total if y == top]
        check("%s peak marker on the curve's top" % name, min(xs) - 0.11 <= px <= max(xs) + 0.11,
              "marker x %.1f, top at %r" % (px, xs))
        circle = peak.find(SVG + "circle")
        check("%s peak dot at the top" % name, abs(float(circle.get("cy")) - top) <= 0.11, "%s vs %s" % (circle.get("cy"), top))
        legend = "".join(root.find(".//%sg[@id='legend']" % SVG).itertext())
        check("%s legend names the categories" % name, "Parameters" in legend and "Activations" in legend, legend)
        check("%s at most ~2000 points" % name, len(total) <= 2 * 2000 + 2, str(len(total)))

    html = os.path.join(tmp, "t.html")
    p = run(["models/mlp.onnx", "--batch", "4", "--timeline", html])
    page = open(html).read() if p.returncode == 0 else ""
    check("--timeline .html writes a page with the SVG inline",
          page.startswith("<!DOCTYPE html>") and ET.fromstring(page[page.find("<svg"):page.find("</svg>") + 6]) is not None,
          p.stderr.strip())

    p = run(["models/mlp.onnx", "--timeline", os.path.join(tmp, "t.png")])
    check("--timeline t.png is refused with one line", p.returncode == 2 and len(p.stderr.strip().splitlines()) == 1
          and ".svg or .html" in p.stderr, p.stderr)
    p = run(["models/mlp.onnx", "--timeline", os.path.join(tmp, "no", "such", "dir.svg")])
    check("--timeline into a missing folder is refused with one line",
          p.returncode == 2 and len(p.stderr.strip().splitlines()) == 1, p.stderr)

passed = sum(results)
print("%d passed, %d failed" % (passed, len(results) - passed))
sys.exit(0 if results and passed == len(results) else 1)
