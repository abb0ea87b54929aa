"""`python3 validate/cudnn_table.py`: cuDNN convolution workspaces as a table for memest.

Reads the single-conv probes of `validate kernels` (rows with "kind": "conv") and writes
estimator/data/cudnn_h200.inc, the C++ rows estimator/ops/conv.cc looks layers up in.

For each probe and phase (fwd; bwd = input and weight gradient; bwd_first = weight
gradient only) the transient is the peak of live bytes over the probe's allocation
events, each rounded to the caching allocator's 512 B, minus the bytes still alive at
the end (the outputs: y, grad_input, grad_weight, grad_bias). That is what the
simulator adds as a transient right after the node's outputs.

The backward is two cuDNN calls, each with a workspace of its own: the input's gradient
(dgrad), then the weight's (wgrad). The probes record grad_input, dgrad's workspace
(allocated and freed), grad_weight, wgrad's workspace, grad_bias. The table keeps the
two apart (bwd_data, bwd_weight: the transient above the gradients made so far, while
one, then two or more gradients exist): a workspace cached after dgrad seldom fits
wgrad's, and the segments each one makes are what the reserved memory holds.

memest keeps the batch symbolic, so a workspace must be a polynomial in N: each phase is
a + b * N (bytes; see affine()). Most engines' workspaces are affine in the batch (unet's
3x3 wgrad: 3.9 MiB + 8.0 MiB per sample), so one per-sample value from a small batch
overestimates large ones. A layer probed with and without bias (same shape otherwise)
keeps the larger value.

  /usr/bin/python3 validate/cudnn_table.py [--in KERNELS.jsonl] [--out FILE.inc]
         [--exclude-models a,b,...] [--stats]

--exclude-models drops probe rows whose "models" list holds only those models (to
measure how the table does on layers it has not seen); --stats prints how well
linear scaling in the batch holds across the measured batches.
"""
import argparse
import collections
import json
import lzma
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
DTYPES = {"float32": "DType::F32", "float16": "DType::F16", "bfloat16": "DType::BF16"}
PHASES = ("fwd", "bwd", "bwd_first")
COLUMNS = ("fwd", "bwd_data", "bwd_weight", "bwd_first")


def rounded(b):
    return max(512, (b + 511) // 512 * 512)


def transient(events):
    """Peak live bytes over the events, minus what is alive at the end (the outputs)."""
    live = peak = 0
    for action, size in events:
        live += rounded(size) if action == "a" else -rounded(size)
        peak = max(peak, live)
    return peak - live


def split_backward(events):
    """(dgrad, wgrad) transients of a full backward: above the gradients allocated so far
    (allocations never freed in the probe), while one gradient exists, then two or more."""
    freed = set()
    live_at = {}
    for i, (action, size) in enumerate(events):
        if action == "a":
            live_at.setdefault(size, []).append(i)
        elif live_at.get(size):
            freed.add(live_at[size].pop())
    live = kept = grads = 0
    out = [0, 0]
    for i, (action, size) in enumerate(events):
        live += rounded(size) if action == "a" else -rounded(size)
        if action == "a" and i not in freed:
            kept += rounded(size)
            grads += 1
        if grads >= 1:
            part = 0 if grads == 1 else 1
            out[part] = max(out[part], live - kept)
    return tuple(out)


def layer_key(row):
    kind, (cin, h, w), cout, k, stride, pad, dil, groups, _bias, opad = row["cfg"]
    cl = 1 if row.get("memory_format") == "channels_last" else 0
    return (1 if kind == "convT" else 0, cl, row["dtype"], cin, h, w, cout, k[0], k[1], stride[0], stride[1],
            pad[0], pad[1], dil[0], dil[1], groups, opad[0], opad[1])


def load(path, exclude):
    """{layer key: {n: (fwd, bwd, bwd_first)}}, plus the torch and cuDNN versions seen."""
    layers = collections.defaultdict(dict)
    versions = set()
    if not os.path.exists(path) and os.path.exists(path + ".xz"):
        path += ".xz"  # the committed results are xz-compressed to keep the tree small
    with (lzma.open(path, "rt") if path.endswith(".xz") else open(path)) as f:
        for line in f:
            row = json.loads(line)
            if row.get("kind") != "conv" or not all(p in row for p in PHASES):
                continue
            if exclude and set(row["models"]) <= exclude:
                continue
            versions.add((row.get("torch"), row.get("cudnn")))
            t = (transient(row["fwd"]),) + split_backward(row["bwd"]) + (transient(row["bwd_first"]),)
            old = layers[layer_key(row)].get(row["n"])
            layers[layer_key(row)][row["n"]] = tuple(max(a, b) for a, b in zip(old, t)) if old else t
    return layers, versions


def affine(points):
    """(a, b): bytes a + b * N at batch N, the line (a, b >= 0) that covers every measured
    (n, bytes) point with the least excess summed over them: no measured batch gets less
    than it needed (memest's bar is never to be badly under), and where the workspace is
    affine in the batch the line goes through the measurements. The best such line runs
    through two points, or through the origin and one, or is flat, so those candidates
    are all there is to try. With one batch probed: per sample, b = bytes / n.
    Leave-one-batch-out on the probes (--stats) cuts the absolute error of the per-sample
    rule (b = the largest bytes / n) to about a third; resnet18's 3x3 512-channel dgrad at
    n = 256: 74 MiB measured, 121 per sample from n = 32, 74 from this line."""
    ns = sorted(points)
    per_sample = (0, max(-(-points[n] // n) for n in ns))
    if len(ns) == 1:
        return per_sample
    candidates = [per_sample, (max(points.values()), 0)]
    for i, n1 in enumerate(ns):
        for n2 in ns[i + 1:]:
            b = -(-(points[n2] - points[n1]) // (n2 - n1))
            if b >= 0 and points[n2] - b * n2 >= 0:
                candidates.append((max(0, max(points[n] - b * n for n in ns)), b))
    best = None
    for a, b in candidates:
        excess = sum(a + b * n - points[n] for n in ns)
        if min(a + b * n - points[n] for n in ns) >= 0 and (best is None or excess < best[0]):
            best = (excess, a, b)
    return best[1], best[2]


def fit(by_n):
    """Per phase (a, b) over the measured batches."""
    return tuple(affine({n: v[i] for n, v in by_n.items()}) for i in range(len(COLUMNS)))


def linearity(layers):
    """Per phase: each measured batch of a layer probed at three or more, predicted from
    the others (a + b * n) against what it measured."""
    out = []
    for p, name in enumerate(COLUMNS):
        c = collections.Counter()
        abs_err = []
        for by_n in layers.values():
            if len(by_n) < 3:
                continue
            for n in sorted(by_n)[1:]:
                a, b = affine({m: v[p] for m, v in by_n.items() if m != n})
                pred, real = a + b * n, by_n[n][p]
                abs_err.append(abs(pred - real))
                if max(pred, real) < 1 << 20:
                    c["both < 1 MiB"] += 1
                elif abs(pred - real) <= 0.1 * max(pred, real):
                    c["within 10%"] += 1
                elif pred > real:
                    c["over by > 10%"] += 1
                else:
                    c["under by > 10%"] += 1
        abs_err.sort()
        tot = sum(c.values())
        med = abs_err[len(abs_err) // 2] / 2**20 if abs_err else 0
        p90 = abs_err[int(len(abs_err) * 0.9)] / 2**20 if abs_err else 0
        out.append("%-9s %4d (layer, left-out n) pairs: %s; |error| median %.1f MiB, p90 %.1f MiB" % (
            name, tot, ", ".join("%s %d" % kv for kv in sorted(c.items())), med, p90))
    return out


def write(layers, versions, out, argv, exclude):
    torch_v = ", ".join(sorted({str(v[0]) for v in versions}))
    cudnn_v = ", ".join(sorted({str(v[1]) for v in versions}))
    lines = [
        "// Generated by validate/cudnn_table.py; do not edit. Regenerate with:",
        ("//   /usr/bin/python3 validate/cudnn_table.py " + " ".join(argv)).rstrip(),
        "// Source: validate/results/kernels-h200-torch2.11.jsonl and kernels-cl-h200-torch2.11.jsonl (inputs",
        "// channels-last), single-conv probes on an NVIDIA H200,",
        "// torch %s, cuDNN %s, cudnn.benchmark=False (cuDNN's heuristics pick the engine)." % (torch_v, cudnn_v),
    ]
    if exclude:
        lines.append("// Rows of these models left out: %s" % ",".join(sorted(exclude)))
    lines += [
        "// Row: {transposed, channels-last input, run dtype, Cin, H, W, Cout, kh, kw, sh, sw, ph, pw, dh, dw,",
        "//       groups, oph, opw,",
        "//       n (the largest batch measured), then a, b of fwd, bwd_data, bwd_weight, bwd_first}:",
        "//       the transient above the outputs (see the generator) is a + b * N bytes at batch N.",
    ]
    for key in sorted(layers, key=lambda k: (k[0], k[1], list(DTYPES).index(k[2])) + k[3:]):
        ab = fit(layers[key])
        vals = [str(key[0]), str(key[1]), DTYPES[key[2]]] + [str(v) for v in key[3:]] + [str(max(layers[key]))]
        vals += [str(int(v)) for pair in ab for v in pair]
        lines.append("{" + ",".join(vals) + "},")
    with open(out, "w") as f:
        f.write("\n".join(lines) + "\n")


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--in", dest="src", action="append",
                    help="kernels JSONL (repeatable); default: results/kernels-h200-torch2.11.jsonl and "
                         "results/kernels-cl-h200-torch2.11.jsonl (channels-last probes)")
    ap.add_argument("--out", default=os.path.join(ROOT, "estimator", "data", "cudnn_h200.inc"))
    ap.add_argument("--exclude-models", default="")
    ap.add_argument("--stats", action="store_true")
    args = ap.parse_args(argv)
    exclude = {m for m in args.exclude_models.split(",") if m}
    srcs = args.src or [os.path.join(HERE, "results", f) for f in
                        ("kernels-h200-torch2.11.jsonl", "kernels-cl-h200-torch2.11.jsonl")]
    layers, versions = collections.defaultdict(dict), set()
    for src in srcs:
        more, v = load(src, exclude)
        for key, by_n in more.items():
            layers[key].update(by_n)
        versions |= v
    if not layers:
        raise SystemExit("cudnn_table: no conv rows in %s" % ", ".join(srcs))
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    shown = [a for a in argv if not a.startswith("--stats")]
    write(layers, versions, args.out, shown, exclude)
    print("cudnn_table: %d layers -> %s" % (len(layers), args.out))
    if args.stats:
        print("\n".join(linearity(layers)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
