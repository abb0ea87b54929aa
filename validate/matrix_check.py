"""`python3 -m validate matrix-check`: every file of the export matrix loads, and its
parameter bytes are torch's (issue 17). Runs without torch, in CI.

    python3 -m validate matrix-check unpack models/matrix-h200-torch2.11.tar.xz DEST
    python3 -m validate matrix-check loads DEST --memest build/memest [--enforce]

`unpack` also lays each variant out as DEST/<variant>/<set>/<model>.onnx (links), the
layout `validate compare --models-dir` reads for the measured corpus and random sets.
`loads` runs memest on each file the manifests list as exported, at batch 2 with the
file's own arguments; a file that fails, or whose parameter bytes differ from the count
torch gave at export, is listed. A file over by no more than the tables memest names as
computed from parameters with buffers or indices (`accounting.derived_parameters`: the exporter folded a
parameter into a larger `index_N`, so the file does not hold torch's count) is listed
apart (FOLDED) and not counted against the parameter threshold. With --enforce it exits 1 when there are more of
either than thresholds.json's "matrix" entry allows (the count when it was committed:
lower it as files are fixed, never raise it without a reason in the commit message).
"""
import argparse
import glob
import json
import os
import subprocess
import sys
import tarfile
from concurrent.futures import ThreadPoolExecutor

HERE = os.path.dirname(os.path.abspath(__file__))


def unpack(archive, dest):
    os.makedirs(dest, exist_ok=True)
    with tarfile.open(archive) as tar:
        tar.extractall(dest)
    for path in glob.glob(os.path.join(dest, "*", "*.onnx")):
        set_name = os.path.basename(os.path.dirname(path))
        model, variant = os.path.basename(path)[:-len(".onnx")].split(".", 1)
        link = os.path.join(dest, variant, set_name, model + ".onnx")
        os.makedirs(os.path.dirname(link), exist_ok=True)
        if not os.path.lexists(link):
            os.symlink(os.path.abspath(path), link)


def manifest_rows(dest):
    rows = []
    for f in sorted(glob.glob(os.path.join(dest, "manifest-*.jsonl"))):
        with open(f) as fh:
            rows += [json.loads(line) for line in fh if line.strip()]
    return [r for r in rows if r.get("status") == "ok"]


def check_one(memest, dest, row):
    cmd = [memest, os.path.join(dest, row["path"]), "--batch", "2", "--json"] + row["memest_args"]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    if p.returncode != 0:
        return "load", (p.stderr.strip().splitlines() or ["exit %d" % p.returncode])[-1][:300]
    acc = json.loads(p.stdout)["accounting"]
    got = acc["parameter_bytes"]
    if got != row["param_bytes"]:
        why = "parameter bytes %d, torch %d (%+d)" % (got, row["param_bytes"], got - row["param_bytes"])
        # The exporter folded a parameter into a larger table that memest names (with a
        # buffer or indices: LeViT's `index_N`): the file does not hold torch's count, and
        # memest says by how much at most it is over.
        derived = acc.get("derived_parameters", 0)
        if 0 < got - row["param_bytes"] <= derived:
            return "folded", why + ", within the %d bytes memest names as tables computed from parameters" % derived
        # Parameters no op of the exported forward reads (a vision tower beside a forward on
        # token ids): the exporter dropped them, memest names how many and warns.
        unread = acc.get("unread_parameter_tensors", 0)
        if got < row["param_bytes"] and unread > 0:
            return "unread", why + ", %d parameters no op reads, which the file holds in no form (memest says so)" % unread
        return "params", why
    return "ok", ""


def loads(args):
    rows = manifest_rows(args.dest)
    if not rows:
        print("matrix-check: no exported files listed under %s" % args.dest, file=sys.stderr)
        return 2
    with ThreadPoolExecutor(args.jobs) as ex:
        results = list(ex.map(lambda r: check_one(args.memest, args.dest, r), rows))
    fails = [(r, why) for r, (kind, why) in zip(rows, results) if kind == "load"]
    params = [(r, why) for r, (kind, why) in zip(rows, results) if kind == "params"]
    folded = [(r, why) for r, (kind, why) in zip(rows, results) if kind == "folded"]
    unread = [(r, why) for r, (kind, why) in zip(rows, results) if kind == "unread"]
    for r, why in fails:
        print("LOAD    %-48s %s" % (r["path"], why))
    for r, why in params:
        print("PARAMS  %-48s %s" % (r["path"], why))
    for r, why in folded:
        print("FOLDED  %-48s %s" % (r["path"], why))
    for r, why in unread:
        print("UNREAD  %-48s %s" % (r["path"], why))
    n = len(rows)
    print("matrix: %d files, %d load (%.1f%%), %d with torch's parameter bytes exactly, %d over by tables "
          "the exporter computed from parameters, %d under by parameters no op reads (memest says so)" % (
              n, n - len(fails), 100.0 * (n - len(fails)) / n,
              n - len(fails) - len(params) - len(folded) - len(unread), len(folded), len(unread)))
    if args.enforce:
        with open(args.thresholds) as f:
            t = json.load(f)["matrix"][args.key]
        bad = []
        if len(fails) > t["max_load_failures"]:
            bad.append("%d files fail to load (allowed %d)" % (len(fails), t["max_load_failures"]))
        if len(params) > t["max_param_mismatches"]:
            bad.append("%d files differ from torch's parameter bytes (allowed %d)" % (len(params),
                                                                                     t["max_param_mismatches"]))
        if n < t["min_files"]:
            bad.append("only %d files checked (expected %d)" % (n, t["min_files"]))
        if bad:
            print("matrix regressed: " + "; ".join(bad))
            return 1
    return 0


def main(argv):
    p = argparse.ArgumentParser(prog="python3 -m validate matrix-check")
    sub = p.add_subparsers(dest="cmd", required=True)
    u = sub.add_parser("unpack")
    u.add_argument("archive")
    u.add_argument("dest")
    l = sub.add_parser("loads")
    l.add_argument("dest")
    l.add_argument("--memest", default="build/memest")
    l.add_argument("--jobs", type=int, default=2)
    l.add_argument("--enforce", action="store_true")
    l.add_argument("--key", default="matrix-h200-torch2.11", help="the archive's entry under thresholds.json's \"matrix\"")
    l.add_argument("--thresholds", default=os.path.join(HERE, "thresholds.json"))
    args = p.parse_args(argv)
    if args.cmd == "unpack":
        unpack(args.archive, args.dest)
        return 0
    return loads(args)
