"""`python3 -m validate reduceprobe --seed S --n N`: a reduction's temporaries on a random grid (issue 18).

A global average pool (`adaptive_avg_pool2d(x, 1)`, which PyTorch computes as
`x.mean((-1, -2), keepdim=True)`; an exporter's GlobalAveragePool or ReduceMean) over a
map whose channels are innermost (channels-last strides, as a channel LayerNorm written
with movedim leaves them) reduces over the outer dims: the CUDA reduction then splits
each output's inputs over many blocks and sums the blocks' partial results through a
global buffer (Reduce.cuh, ReduceConfig::global_memory_size). A random grid of such
reductions (1-D, 2-D and 3-D maps, contiguous or channels-last, fp32/fp16/bf16, mean or
sum, over the spatial dims or over the channels) records what each allocates beyond its
output, so that the rule can be fitted on one seed and checked on another.
"""
import argparse
import json
import random
import time

from validate.kernels import _events


def draw(r):
    nd = r.choices([1, 2, 3], [2, 5, 2])[0]
    c = r.choice([3, 8, 16, 32, 48, 64, 96, 128, 256, 512, 768, 1024, 2048])
    size = {1: r.choice([16, 64, 256, 1000, 4096, 16000]), 2: r.choice([1, 2, 7, 14, 17, 28, 48, 56, 96, 112, 192, 224]),
            3: r.choice([2, 4, 8, 16, 28, 32])}[nd]
    spatial = [size] * nd
    per_sample = c * size ** nd
    n = min(max(1, int(2 ** 27 // per_sample)), r.choice([1, 2, 4, 8, 16, 32, 64, 128]))
    return {"nd": nd, "n": n, "c": c, "spatial": spatial, "dtype": r.choice(["float32", "float16", "bfloat16"]),
            "channels_last": r.random() < 0.7, "op": r.choice(["mean", "mean", "sum"]),
            "over": r.choices(["spatial", "channels"], [4, 1])[0]}


def probe(torch, c):
    dt = getattr(torch, c["dtype"])
    x = torch.randn([c["n"], c["c"]] + c["spatial"], device="cuda", dtype=dt)
    if c["channels_last"]:
        x = x.movedim(1, -1).contiguous().movedim(-1, 1)
    dims = tuple(range(2, 2 + c["nd"])) if c["over"] == "spatial" else (1,)
    fn = getattr(torch, c["op"])
    return {"events": _events(torch, lambda: fn(x, dims, keepdim=True)), "in_bytes": x.numel() * x.element_size(),
            "in_strides": list(x.stride())}


def main(argv):
    p = argparse.ArgumentParser(prog="python3 -m validate reduceprobe")
    p.add_argument("--seed", type=int, required=True)
    p.add_argument("--n", type=int, default=500)
    p.add_argument("--out", required=True)
    p.add_argument("--deadline", type=float, default=0)
    args = p.parse_args(argv)
    import torch
    r = random.Random(args.seed)
    meta = {"torch": torch.__version__, "gpu": torch.cuda.get_device_name(), "seed": args.seed,
            "sms": torch.cuda.get_device_properties(0).multi_processor_count}
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
