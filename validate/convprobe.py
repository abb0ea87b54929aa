"""`python3 -m validate convprobe --seed S --n N`: cuDNN workspaces on a random grid (issue 18).

The zoo's convolutions (validate kernels) are what memest's table holds; a user's are
anything. This draws convolutions at random: 1-D/2-D/3-D, transposed, any kernel,
stride, dilation, grouping (dense, grouped, depthwise), channels, spatial size, batch and
dtype, and records what cuDNN took beyond the outputs for the forward call and the two
backward calls (input gradient and weight gradient together, weight gradient alone),
as kernels.probe_conv does for 2-D. A seed draws a grid; the model of the workspace is
fitted on one seed and checked on another (disjoint) one.
"""
import argparse
import json
import random
import time

from validate.kernels import _events


def draw(r):
    nd = r.choices([1, 2, 3], [2, 5, 2])[0]
    transposed = r.random() < 0.2
    cin = r.choice([3, 8, 16, 24, 32, 48, 64, 96, 128, 192, 256, 384, 512, 768, 1024])
    cout = r.choice([8, 16, 32, 64, 96, 128, 256, 512, 1024])
    k = r.choice([1, 1, 2, 3, 3, 3, 4, 5, 7] if nd < 3 else [1, 3, 3, 5])
    stride = r.choice([1, 1, 1, 2, 2, 4]) if k > 1 else r.choice([1, 1, 2])
    dil = r.choice([1, 1, 1, 2, 3, 4]) if k > 1 and stride == 1 else 1
    gsel = r.random()
    groups = 1
    if gsel < 0.15 and not transposed:
        groups, cout = cin, cin * r.choice([1, 1, 2])
    elif gsel < 0.3:
        for g in (2, 4, 8, 32):
            if cin % g == 0 and cout % g == 0 and r.random() < 0.5:
                groups = g
    size = {1: r.choice([16, 64, 256, 1000, 4096, 16000]), 2: r.choice([7, 14, 17, 28, 32, 56, 64, 112, 128, 224]),
            3: r.choice([4, 8, 16, 28, 32, 56])}[nd]
    spatial = [size] * nd
    if nd == 3 and r.random() < 0.5:
        spatial[0] = r.choice([4, 8, 16])
    pad = (dil * (k - 1)) // 2 if r.random() < 0.7 else 0
    dtype = r.choice(["float32", "float16", "bfloat16"])
    per_sample = max(cin, cout) * max(1, _prod(spatial)) * (stride if transposed else 1) ** nd
    nmax = max(1, int(2 ** 27 // per_sample))
    n = min(nmax, r.choice([1, 2, 4, 8, 16, 32, 64, 128, 256]))
    opad = 1 if transposed and stride > 1 and r.random() < 0.5 else 0
    return {"nd": nd, "transposed": transposed, "n": n, "cin": cin, "cout": cout, "spatial": spatial, "k": k,
            "stride": stride, "pad": pad, "dil": dil, "groups": groups, "dtype": dtype, "opad": opad,
            "bias": r.random() < 0.5}


def _prod(xs):
    p = 1
    for x in xs:
        p *= x
    return p


def probe(torch, c):
    import torch.nn.functional as F
    nd = c["nd"]
    dt = getattr(torch, c["dtype"])
    x = torch.randn([c["n"], c["cin"]] + c["spatial"], device="cuda", dtype=dt)
    k = [c["k"]] * nd
    if c["transposed"]:
        wt = torch.randn([c["cin"], c["cout"] // c["groups"]] + k, device="cuda", dtype=dt)
    else:
        wt = torch.randn([c["cout"], c["cin"] // c["groups"]] + k, device="cuda", dtype=dt)
    b = torch.randn(c["cout"], device="cuda", dtype=dt) if c["bias"] else None
    stride, pad, dil, opad = [c["stride"]] * nd, [c["pad"]] * nd, [c["dil"]] * nd, [c["opad"]] * nd
    if c["transposed"]:
        fn = [F.conv_transpose1d, F.conv_transpose2d, F.conv_transpose3d][nd - 1]
        fwd = lambda: fn(x, wt, b, stride, pad, opad, c["groups"], dil)
    else:
        fn = [F.conv1d, F.conv2d, F.conv3d][nd - 1]
        fwd = lambda: fn(x, wt, b, stride, pad, dil, c["groups"])
    rows = {"fwd": _events(torch, fwd)}
    y = fwd()
    rows["out_shape"] = list(y.shape)
    gy = torch.randn_like(y)
    del y
    for name, mask in (("bwd", [True, True, c["bias"]]), ("bwd_first", [False, True, c["bias"]])):
        rows[name] = _events(torch, lambda: torch.ops.aten.convolution_backward(
            gy, x, wt, [c["cout"]] if c["bias"] else None, stride, pad, dil, c["transposed"], opad, c["groups"], mask))
    return rows


def main(argv):
    p = argparse.ArgumentParser(prog="python3 -m validate convprobe")
    p.add_argument("--seed", type=int, required=True)
    p.add_argument("--n", type=int, default=500)
    p.add_argument("--out", required=True)
    p.add_argument("--deadline", type=float, default=0)
    args = p.parse_args(argv)
    import torch
    r = random.Random(args.seed)
    meta = {"torch": torch.__version__, "cudnn": torch.backends.cudnn.version(), "gpu": torch.cuda.get_device_name(),
            "cudnn_benchmark": bool(torch.backends.cudnn.benchmark), "seed": args.seed}
    with open(args.out, "a") as f:
        for i in range(args.n):
            if args.deadline and time.time() > args.deadline:
                break
            c = draw(r)
            row = {"seed": args.seed, "i": i, "cfg": c, "versions": meta}
            try:
                row.update(probe(torch, c))
                row["status"] = "ok"
            except Exception as exc:
                row["status"] = "error: %s: %s" % (type(exc).__name__, str(exc).strip().splitlines()[0][:200])
            torch.cuda.empty_cache()
            f.write(json.dumps(row) + "\n")
            f.flush()
    return 0
