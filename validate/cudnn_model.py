"""`/usr/bin/python3 validate/cudnn_model.py`: cuDNN workspaces of any convolution, as an envelope.

The table (cudnn_table.py) holds the zoo's own 2-D layers. Every other convolution
(1-D, 3-D, transposed, SAME-padded, dilated, grouped, symbolic sizes, a 2-D layer far
from every row) takes its workspace from this model, fitted on the random-grid probes
of `validate convprobe` (results/convprobe-h200-torch2.11.jsonl.xz): seed 1 to fit,
seed 2 (disjoint configurations) to check.

What the probes show: cuDNN's engines under heuristics mode mostly run in NHWC, so a
contiguous (NCHW) call converts its operands: the workspace is about input + output +
weight bytes (a 1-D conv is run as 2-D with H = 1, a 3-D one the same way). Depthwise
convolutions go to PyTorch's own kernels and take none; 1x1 convolutions in fp32 mostly
none (a GEMM); weight gradients add split-K partial sums (multiples of the weight in
fp32); grouped convolutions take more, per group. So per call (fwd, dgrad, wgrad,
wgrad alone for a first layer) and class (dense / grouped / depthwise, fp32 / half,
1x1 kernel or not) the workspace is bounded by

    cx * input bytes + cy * output bytes + cw * weight bytes + c0

(bytes in the run dtype; the coefficients are sixteenths so memest keeps them exact in
its integer polynomials), the combination on a grid that covers all but a fraction
(--miss) of the class's seed-1 probes with the least summed excess. A class with few
probes gets an envelope over all of them.

  /usr/bin/python3 validate/cudnn_model.py [--in PROBES.jsonl[.xz]] [--out FILE.inc] [--miss F]

Prints the fit per class and the check on seed 2: the share of probes under the
envelope (by more than 1% + 1 MiB) and the median of envelope / measured (probes over
1 MiB).
"""
import argparse
import json
import lzma
import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
from cudnn_table import split_backward, transient  # noqa: E402
from reduce_launch import conv_bias_buffer  # noqa: E402

ELEM = {"float32": 4, "float16": 2, "bfloat16": 2}
CALLS = ("fwd", "bwd_data", "bwd_weight", "bwd_first")
GROUPS = ("dense", "grouped", "depthwise")
PRECISIONS = ("f32", "half")
KERNELS = ("spatial", "pointwise")
SIXTEENTHS = np.array([0, 2, 4, 8, 12, 16, 17, 18, 20, 24, 32, 48, 64])
# A constant is paid by every convolution of every model, and a small model's peak is tens
# of MiB: constants of 4 to 64 MiB (the fit takes them when offered) put the random set's
# small models 4% to 20% over (validate/results/random-h200-torch2.11.jsonl.xz, median
# |error| 3.7% against 1.5% with at most 1 MiB).
CONSTANTS = np.array([0, 1]) << 20


def prod(xs):
    p = 1
    for x in xs:
        p *= x
    return p


def group_kind(cin, groups):
    """As memest's conv.cc classes it from an ONNX node: depthwise when each group is one input channel."""
    return "dense" if groups == 1 else "depthwise" if groups == cin else "grouped"


def _without(events, size):
    """The events without the first allocation of `size` bytes and its free."""
    out, dropped, freed = [], False, False
    for e in events:
        if not dropped and e[0] == "a" and e[1] == size:
            dropped = True
            continue
        if dropped and not freed and e[0] == "f" and e[1] == size:
            freed = True
            continue
        out.append(e)
    return out


def load(path, layout="any", minus_bias=False, nd=None):
    """[(seed, class, (x, y, w) bytes, (fwd, bwd_data, bwd_weight, bwd_first) bytes)].
    layout: keep only probes whose input was "contiguous" or "channels-last" ("any": all).
    minus_bias: leave out the bias gradient's reduction buffer, which memest models apart
    (reduce_launch.py; the simulator's bias_grad_is_reduction)."""
    opener = lzma.open if path.endswith(".xz") else open
    out = []
    with opener(path, "rt") as f:
        for line in f:
            r = json.loads(line)
            if r.get("status") != "ok":
                continue
            c = r["cfg"]
            if layout != "any" and bool(c.get("channels_last")) != (layout == "channels-last"):
                continue
            if nd is not None and c["nd"] != nd:
                continue
            if minus_bias:
                b = conv_bias_buffer(c, r["out_shape"])
                if b:
                    r["bwd"], r["bwd_first"] = _without(r["bwd"], b), _without(r["bwd_first"], b)
            es = ELEM[c["dtype"]]
            x = c["n"] * c["cin"] * prod(c["spatial"]) * es
            y = prod(r["out_shape"]) * es
            w = c["cin"] * (c["cout"] // c["groups"]) * c["k"] ** c["nd"] * es
            cls = (group_kind(c["cin"], c["groups"]), "f32" if c["dtype"] == "float32" else "half",
                   "pointwise" if c["k"] == 1 else "spatial")
            ws = (transient(r["fwd"]),) + split_backward(r["bwd"]) + (transient(r["bwd_first"]),)
            out.append((r["seed"], cls, (x, y, w), ws))
    return out


SLACK = 1 << 20  # bytes: a probe is "under" when the envelope misses it by more than 1% + SLACK
FLOOR = 32 << 20  # bytes: excess is counted relative to the measurement + FLOOR


def under(pred, meas):
    return pred < meas * 0.99 - SLACK


def fit(terms, meas, miss):
    """(cx, cy, cw in sixteenths, c0 bytes): the grid point covering all but `miss` of the probes
    with the least summed relative excess (over the measurement + 1 MiB, so that a constant
    that is nothing beside a GiB-sized probe still counts on the small ones)."""
    combos = np.array([(a, b, c) for a in SIXTEENTHS for b in SIXTEENTHS for c in SIXTEENTHS])
    base = combos @ terms.T / 16.0
    allowed = int(np.floor(miss * len(meas)))
    best = None
    for c0 in CONSTANTS:
        pred = base + c0
        ok = under(pred, meas).sum(1) <= allowed
        if not ok.any():
            continue
        excess = np.where(ok, ((pred - meas).clip(0) / (meas + FLOOR)).sum(1), np.inf)
        i = int(excess.argmin())
        if best is None or excess[i] < best[0]:
            best = (excess[i], tuple(int(v) for v in combos[i]), int(c0))
    if best is None:
        raise SystemExit("cudnn_model: no envelope on the grid covers %d of %d probes" % (len(meas) - allowed, len(meas)))
    return best[1] + (best[2],)


def check(coef, terms, meas):
    pred = terms @ np.array(coef[:3]) / 16.0 + coef[3]
    big = meas > 1 << 20
    return (under(pred, meas).mean() if len(meas) else 0.0,
            float(np.median(pred[big] / meas[big])) if big.any() else float("nan"), int(big.sum()))


def probed_gpus(paths):
    """The GPUs the probes ran on ("NVIDIA H200"), from each file's first record."""
    names = []
    for path in paths:
        opener = lzma.open if path.endswith(".xz") else open
        with opener(path, "rt") as f:
            name = json.loads(f.readline()).get("versions", {}).get("gpu", "unknown GPU")
        if name not in names:
            names.append(name)
    return " and ".join(names)


def main(argv):
    global SLACK, FLOOR
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--in", dest="src", default=os.path.join(HERE, "results", "convprobe-h200-torch2.11.jsonl.xz"))
    ap.add_argument("--out", default=os.path.join(ROOT, "estimator", "data", "cudnn_model_h200.inc"))
    ap.add_argument("--miss", type=float, default=0.10,
                    help="share of a class's seed-1 probes the envelope may be under (default 0.10)")
    ap.add_argument("--slack", type=int, default=SLACK, help="bytes a probe may be missed by beyond 1%%")
    ap.add_argument("--floor", type=int, default=FLOOR, help="excess is relative to the measurement + this")
    ap.add_argument("--fit-seed", default="1", help="the probes' seeds to fit on (comma-separated); the others check")
    ap.add_argument("--layout", choices=("any", "contiguous", "channels-last"), default="any",
                    help="only probes whose input had this layout")
    ap.add_argument("--minus-bias-reduction", action="store_true",
                    help="leave the bias gradient's reduction buffer out of the transients (memest models it apart)")
    ap.add_argument("--nd", type=int, choices=(1, 2, 3),
                    help="only probes of this many spatial dimensions; a class without fit probes gets no row")
    ap.add_argument("--only-probed", action="store_true",
                    help="rows only for the classes the probes hold (a family's own table), as --nd does")
    ap.add_argument("--min-probes", type=int, default=1,
                    help="with --nd: a class with fewer fit probes gets no row (memest falls back to the general rows)")
    ap.add_argument("--constants", default="0,1",
                    help="the constants c0 offered, in MiB, comma-separated (default 0,1)")
    ap.add_argument("--wide", action="store_true",
                    help="coefficients up to 32 (channels-last depthwise layers take workspaces of many times x + y)")
    args = ap.parse_args(argv)
    global SIXTEENTHS, CONSTANTS
    CONSTANTS = np.array([int(v) for v in args.constants.split(",")]) << 20
    if args.wide:
        SIXTEENTHS = np.concatenate([SIXTEENTHS, [96, 128, 192, 256, 384, 512]])
    SLACK, FLOOR = args.slack, args.floor
    fit_seeds = {int(v) for v in args.fit_seed.split(",")}
    probes = []
    for src in args.src.split(","):
        probes += load(src, args.layout, args.minus_bias_reduction, args.nd)
    rows, report = [], []
    total = {c: [0, 0, []] for c in CALLS}
    for ci, call in enumerate(CALLS):
        for g in GROUPS:
            for p in PRECISIONS:
                for k in KERNELS:
                    cls = (g, p, k)
                    sel = [q for q in probes if q[1] == cls]
                    fit_set = [q for q in sel if q[0] in fit_seeds]
                    chk = [q for q in sel if q[0] not in fit_seeds]
                    if (args.nd is not None or args.only_probed) and len(fit_set) < args.min_probes:
                        report.append("%-10s %-9s %-4s %-9s %d fit probes: no row" % (call, g, p, k, len(fit_set)))
                        continue
                    if not fit_set:
                        raise SystemExit("cudnn_model: no probe of seed %s of class %s" % (args.fit_seed, cls))
                    t1 = np.array([q[2] for q in fit_set], float)
                    m1 = np.array([q[3][ci] for q in fit_set], float)
                    coef = fit(t1, m1, args.miss)
                    t2 = np.array([q[2] for q in chk], float).reshape(-1, 3)
                    m2 = np.array([q[3][ci] for q in chk], float)
                    u, med, nbig = check(coef, t2, m2)
                    pred2 = t2 @ np.array(coef[:3]) / 16.0 + coef[3]
                    total[call][0] += int(under(pred2, m2).sum())
                    total[call][1] += len(m2)
                    total[call][2] += list(pred2[m2 > 1 << 20] / m2[m2 > 1 << 20])
                    rows.append((ci, g, p, k, coef))
                    report.append("%-10s %-9s %-4s %-9s fit %3d  %5.4g*x + %5.4g*y + %5.4g*w + %2d MiB   "
                                  "check %3d: under %4.1f%%, median ratio %s (%d over 1 MiB)" % (
                                      call, g, p, k, len(fit_set), coef[0] / 16, coef[1] / 16, coef[2] / 16,
                                      coef[3] >> 20, len(chk), 100 * u,
                                      "%.2f" % med if med == med else "--", nbig))
    print("\n".join(report))
    for call in CALLS:
        u, n, ratios = total[call]
        print("%-10s check: %d probes, under %.1f%%, median ratio %.3f (over 1 MiB)" % (
            call, n, 100 * u / max(n, 1), float(np.median(ratios)) if ratios else float("nan")))
    lines = [
        "// Generated by validate/cudnn_model.py; do not edit. Regenerate with:",
        ("//   /usr/bin/python3 validate/cudnn_model.py " + " ".join(argv)).rstrip(),
        "// Source: %s (seeds %s fitted, the others checked)," % (
            ", ".join(os.path.relpath(p, ROOT) for p in args.src.split(",")), args.fit_seed),
        "// random convolutions on an %s, cudnn.benchmark=False." % probed_gpus(args.src.split(",")),
        "// Row: {call, grouping, fp32, pointwise, cx, cy, cw, c0}: workspace bytes at most",
        "//   (cx * input + cy * output + cw * weight bytes) / 16 + c0, all but %g of seeds %s covered." % (
            args.miss, args.fit_seed),
    ]
    enum = {"fwd": "WsCall::Fwd", "bwd_data": "WsCall::BwdData", "bwd_weight": "WsCall::BwdWeight",
            "bwd_first": "WsCall::BwdFirst", "dense": "WsGroups::Dense", "grouped": "WsGroups::Grouped",
            "depthwise": "WsGroups::Depthwise"}
    for ci, g, p, k, coef in rows:
        lines.append("{%s,%s,%d,%d,%d,%d,%d,%d}," % (enum[CALLS[ci]], enum[g], p == "f32", k == "pointwise",
                                                     *coef))
    with open(args.out, "w") as f:
        f.write("\n".join(lines) + "\n")
    print("cudnn_model: %d rows -> %s" % (len(rows), args.out))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
